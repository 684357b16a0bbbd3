# SPDX-License-Identifier: MIT
# advise/tests/wordindex.pl -- a workload for Debian's perl in
# measure-table.sh: a word index of generated text (8000 lines of 4-11
# words of 2-7 letters, from a fixed seed), built four times: every word's
# positions pushed onto an array in a hash, the ten most frequent words
# printed, the hash cleared for the next round.  Perl's hash entries, keys
# and array bodies come from malloc; the hash's clear frees them together.
use strict;
use warnings;

my $seed = 42;
sub rnd { $seed = ($seed * 1103515245 + 12345) % 2147483648; return $seed; }

my @text;
for my $line (1 .. 8000) {
    my @w = map { join '', map { chr(97 + rnd() % 26) } 1 .. (2 + rnd() % 6) } 1 .. (4 + rnd() % 8);
    push @text, join ' ', @w;
}
my %idx;
for my $round (1 .. 4) {
    %idx = ();
    my $n = 0;
    for my $line (@text) {
        push @{ $idx{$_} }, $n++ for split / /, $line;
    }
    my @top = (sort { @{ $idx{$b} } <=> @{ $idx{$a} } || $a cmp $b } keys %idx)[0 .. 9];
    print "$round: ", scalar(keys %idx), " words; ", join(',', map { "$_=" . scalar(@{ $idx{$_} }) } @top), "\n";
}
