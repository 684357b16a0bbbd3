# SPDX-License-Identifier: MIT
# advise/tests/wordindex.py -- a workload for Debian's python3 in
# measure-table.sh (run with PYTHONMALLOC=malloc, so that Python's small
# objects come from malloc rather than its own pymalloc): a word index of
# generated text (60,000 lines of 12 words from a vocabulary of 50,000,
# from a fixed seed), built three times: every word's line numbers appended
# to a list in a dict, the count printed, the dict dropped for the next
# round.  The lists' item arrays grow by realloc; the dict's drop frees them
# together.
seed = 42


def rnd():
    global seed
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed


vocab = ["w%d" % i for i in range(50000)]
text = [" ".join(vocab[rnd() % 50000] for _ in range(12)) for _ in range(60000)]
for rnd_no in range(1, 4):
    idx = {}
    for n, line in enumerate(text):
        for w in line.split():
            idx.setdefault(w, []).append(n)
    top = sorted(idx, key=lambda k: (-len(idx[k]), k))[:5]
    print("%d: %d words, %d positions; %s" % (rnd_no, len(idx), sum(len(v) for v in idx.values()),
                                            ",".join("%s=%d" % (k, len(idx[k])) for k in top)))
    del idx
