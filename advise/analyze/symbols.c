/* SPDX-License-Identifier: MIT */
/* advise/analyze/symbols.c -- the profile's frames resolved with elfutils' libdwfl.
 *
 * Each module the recorder saw (dl_iterate_phdr at exit and at every
 * dlopen) is reported to a Dwfl of its own at its load bias, opened the
 * first time one of its addresses needs it: a module dlclosed and another
 * loaded at the same addresses cannot clash, and modules no frame touches
 * are never read.  Per address:
 *   - the ELF symbol table gives the function and the offset in it;
 *   - the DWARF scopes at the address give the chain of inlined calls,
 *     innermost first: a wrapper inlined into its caller is a frame of its
 *     own (the one the allocator saw), its caller the next one, at the
 *     DW_AT_call_file/DW_AT_call_line of the inlined call;
 *   - the line table gives the innermost file:line.
 * Separate debug information is found the standard way (build-id under
 * /usr/lib/debug, .gnu_debuglink).  A module not on disk (deleted, vdso)
 * gives module + offset (the file address), an address in no module
 * nothing but itself.
 *
 * C++ names are demangled with __cxa_demangle when the executable links
 * libstdc++ (a weak reference: without it names stay mangled; DWARF's
 * DW_AT_name, unmangled, is used where there is one). */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"

extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status) __attribute__((weak));

/* ---- strings, interned: equal strings are one pointer ---- */

struct strtab {
    char **slots;
    size_t cap, n;
    char *chunk;
    size_t chunk_left;
    char **chunks;
    size_t nchunks, chunks_cap;
};

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static char *chunk_alloc(struct strtab *t, size_t n)
{
    if (n > t->chunk_left) {
        size_t sz = n > 65536 ? n : 65536;
        if (t->nchunks == t->chunks_cap) {
            size_t nc = t->chunks_cap ? 2 * t->chunks_cap : 16;
            char **c = realloc(t->chunks, nc * sizeof *c);
            if (!c)
                return NULL;
            t->chunks = c;
            t->chunks_cap = nc;
        }
        char *c = malloc(sz);
        if (!c)
            return NULL;
        t->chunks[t->nchunks++] = c;
        t->chunk = c;
        t->chunk_left = sz;
    }
    char *r = t->chunk;
    t->chunk += n;
    t->chunk_left -= n;
    return r;
}

static const char *intern(struct strtab *t, const char *s)
{
    if (!s)
        return NULL;
    if (2 * (t->n + 1) > t->cap) {
        size_t nc = t->cap ? 2 * t->cap : 1024;
        char **ns = calloc(nc, sizeof *ns);
        if (!ns)
            return NULL;
        for (size_t i = 0; i < t->cap; i++)
            if (t->slots[i]) {
                size_t j = hash_bytes(t->slots[i], strlen(t->slots[i])) & (nc - 1);
                while (ns[j])
                    j = (j + 1) & (nc - 1);
                ns[j] = t->slots[i];
            }
        free(t->slots);
        t->slots = ns;
        t->cap = nc;
    }
    size_t len = strlen(s);
    size_t j = hash_bytes(s, len) & (t->cap - 1);
    while (t->slots[j]) {
        if (strcmp(t->slots[j], s) == 0)
            return t->slots[j];
        j = (j + 1) & (t->cap - 1);
    }
    char *c = chunk_alloc(t, len + 1);
    if (!c)
        return NULL;
    memcpy(c, s, len + 1);
    t->slots[j] = c;
    t->n++;
    return c;
}

static void strtab_free(struct strtab *t)
{
    for (size_t i = 0; i < t->nchunks; i++)
        free(t->chunks[i]);
    free(t->chunks);
    free(t->slots);
}

/* ---- modules ---- */

/* A compilation unit's address range: the lookup of a module without
 * .debug_aranges (clang writes none; libdw then finds no unit for an
 * address), built once from the units' own DW_AT_ranges / low_pc. */
struct curange {
    Dwarf_Addr lo, hi;           /* in the module's addresses (bias added) */
    Dwarf_Off die;               /* the unit's DIE */
};

/* A symbol of a module's table, for the look-up by address: libdwfl's
 * own (dwfl_module_addrinfo) scans the whole table at each address, which
 * on a C++ program's libraries (libLLVM: 5,000 sites' frames) took
 * seconds. */
struct msym {
    Dwarf_Addr lo, hi;           /* [lo, hi): the symbol's bytes (hi == lo: sizeless) */
    const char *name;            /* libelf's: valid while the module is open */
    int rank;                    /* at one address, the lowest wins: global, weak, local */
};

struct mod {
    uint64_t bias, lo, hi;
    size_t order;                /* in the profile: later records win overlaps */
    const char *path;            /* interned */
    Dwfl *dwfl;
    Dwfl_Module *dm;
    int state;                   /* 0: not opened yet, 1: open, -1: not readable */
    struct curange *cur;         /* sorted by lo; NULL: not built yet */
    size_t ncur;
    bool cur_built;
    struct msym *syms;           /* sorted by lo, then rank */
    size_t nsyms;
    bool syms_built;
};

static int cmp_msym(const void *a, const void *b)
{
    const struct msym *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->hi > y->hi ? -1 : x->hi < y->hi; /* the longer (a sized one) first */
}

/* The module's code and data symbols (not sections, files or TLS), by
 * address; one per address (the global, else the weak, else the local;
 * a sized one before a sizeless one). */
static void build_syms(struct mod *m)
{
    m->syms_built = true;
    int n = dwfl_module_getsymtab(m->dm);
    if (n <= 1)
        return;
    m->syms = malloc((size_t)n * sizeof *m->syms);
    if (!m->syms)
        return;
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        const char *name = dwfl_module_getsym_info(m->dm, i, &sym, &addr, &shndx, NULL, NULL);
        int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
        if (!name || !*name || shndx == SHN_UNDEF || addr == 0 || type == STT_SECTION || type == STT_FILE ||
            type == STT_TLS)
            continue;
        m->syms[m->nsyms++] = (struct msym){ addr, addr + sym.st_size, name,
                                             bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2 };
    }
    qsort(m->syms, m->nsyms, sizeof *m->syms, cmp_msym);
    size_t k = 0;
    for (size_t i = 0; i < m->nsyms; i++)
        if (k == 0 || m->syms[i].lo != m->syms[k - 1].lo)
            m->syms[k++] = m->syms[i];
    m->nsyms = k;
}

/* The symbol at addr and addr's offset in it, as dwfl_module_addrinfo
 * gives them: the nearest symbol below that holds addr, else the nearest
 * sizeless one below; NULL if none. */
static const char *sym_at(struct mod *m, Dwarf_Addr addr, GElf_Off *off)
{
    if (!m->syms_built)
        build_syms(m);
    size_t lo = 0, hi = m->nsyms;
    while (lo < hi) { /* the first symbol above addr */
        size_t mid = lo + (hi - lo) / 2;
        if (m->syms[mid].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct msym *sizeless = NULL;
    /* a symbol below may hold addr past the nearest one (a function's
     * local labels, nested data): a few back */
    for (size_t i = lo, k = 0; i-- > 0 && k < 64; k++) {
        const struct msym *y = &m->syms[i];
        if (y->hi > addr) {
            *off = addr - y->lo;
            return y->name;
        }
        if (y->hi == y->lo && !sizeless)
            sizeless = y;
    }
    if (sizeless) {
        *off = addr - sizeless->lo;
        return sizeless->name;
    }
    return NULL;
}

static int cmp_curange(const void *a, const void *b)
{
    const struct curange *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void build_curanges(struct mod *m)
{
    m->cur_built = true;
    size_t cap = 0;
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = NULL;
    while ((cu = dwfl_module_nextcu(m->dm, cu, &bias)) != NULL) {
        Dwarf_Addr base, lo, hi;
        ptrdiff_t off = 0;
        while ((off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0) {
            if (hi <= lo)
                continue;
            if (m->ncur == cap) {
                size_t nc = cap ? 2 * cap : 64;
                struct curange *p = realloc(m->cur, nc * sizeof *p);
                if (!p)
                    return; /* what is there is sorted below: fewer units found */
                m->cur = p;
                cap = nc;
            }
            m->cur[m->ncur++] = (struct curange){ lo + bias, hi + bias, dwarf_dieoffset(cu) };
        }
    }
    if (m->ncur)
        qsort(m->cur, m->ncur, sizeof *m->cur, cmp_curange);
}

/* The unit covering addr by the ranges above, into *out; NULL if none. */
static Dwarf_Die *cu_by_ranges(struct mod *m, Dwarf_Addr addr, Dwarf_Die *out, Dwarf_Addr *bias)
{
    if (!m->cur_built)
        build_curanges(m);
    size_t lo = 0, hi = m->ncur;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->cur[mid].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* ranges of different units do not overlap; the last starting at or
     * below addr is the only one that may hold it */
    if (lo == 0 || addr >= m->cur[lo - 1].hi)
        return NULL;
    Dwarf *dw = dwfl_module_getdwarf(m->dm, bias);
    if (!dw || !dwarf_offdie(dw, m->cur[lo - 1].die, out))
        return NULL;
    return out;
}

/* ---- the frames of one address: its inline chain, innermost first ---- */

struct entry {
    uint64_t addr;
    struct mra_frame *frames;
    unsigned n;
    bool used;
};

struct mra_symbols {
    struct strtab strs;
    struct mod *mods;
    size_t nmods;
    uint64_t *maxhi;             /* maxhi[i]: the highest hi of mods[0..i] (sorted by lo) */
    struct entry *tab;
    size_t cap, n;
    struct mra_frame **fchunks;  /* frames, in chunks that never move */
    size_t nfchunks, fchunks_cap, fchunk_left;
    struct mra_frame unknown;    /* returned for an address never resolved */
    char *debuginfo_path;
};

static struct mra_frame *frames_alloc(struct mra_symbols *s, unsigned n)
{
    enum { CHUNK = 4096 };
    if (n > CHUNK)
        return NULL;
    if (n > s->fchunk_left) {
        if (s->nfchunks == s->fchunks_cap) {
            size_t nc = s->fchunks_cap ? 2 * s->fchunks_cap : 16;
            struct mra_frame **c = realloc(s->fchunks, nc * sizeof *c);
            if (!c)
                return NULL;
            s->fchunks = c;
            s->fchunks_cap = nc;
        }
        struct mra_frame *c = calloc(CHUNK, sizeof *c);
        if (!c)
            return NULL;
        s->fchunks[s->nfchunks++] = c;
        s->fchunk_left = CHUNK;
    }
    struct mra_frame *r = s->fchunks[s->nfchunks - 1] + (CHUNK - s->fchunk_left);
    s->fchunk_left -= n;
    return r;
}

static uint64_t hash_addr(uint64_t a)
{
    a ^= a >> 33;
    a *= 0xff51afd7ed558ccdull;
    a ^= a >> 33;
    return a;
}

static struct entry *lookup(struct mra_symbols *s, uint64_t addr)
{
    if (!s->cap)
        return NULL;
    size_t j = hash_addr(addr) & (s->cap - 1);
    while (s->tab[j].used) {
        if (s->tab[j].addr == addr)
            return &s->tab[j];
        j = (j + 1) & (s->cap - 1);
    }
    return NULL;
}

static struct entry *insert(struct mra_symbols *s, uint64_t addr)
{
    size_t j = hash_addr(addr) & (s->cap - 1);
    while (s->tab[j].used) {
        if (s->tab[j].addr == addr)
            return &s->tab[j];
        j = (j + 1) & (s->cap - 1);
    }
    s->tab[j].used = true;
    s->tab[j].addr = addr;
    s->n++;
    return &s->tab[j];
}

static int cmp_mod(const void *a, const void *b)
{
    const struct mod *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static struct mod *find_mod(struct mra_symbols *s, uint64_t addr)
{
    /* the last module with lo <= addr, then back while one could still hold addr */
    size_t lo = 0, hi = s->nmods;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->mods[mid].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    struct mod *best = NULL;
    for (size_t i = lo; i-- > 0;) {
        if (s->maxhi[i] <= addr)
            break;
        struct mod *m = &s->mods[i];
        if (addr < m->hi && (!best || m->order > best->order))
            best = m;
    }
    return best;
}

static const char *base_name(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

static void open_mod(struct mra_symbols *s, struct mod *m)
{
    m->state = -1;
    if (!m->path || !*m->path || access(m->path, R_OK) != 0)
        return;
    static const Dwfl_Callbacks proto = {
        .find_elf = dwfl_build_id_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .section_address = dwfl_offline_section_address,
    };
    /* Dwfl keeps a pointer to the callbacks: they live in s. */
    static Dwfl_Callbacks cb;
    cb = proto;
    cb.debuginfo_path = &s->debuginfo_path;
    Dwfl *d = dwfl_begin(&cb);
    if (!d)
        return;
    dwfl_report_begin(d);
    Dwfl_Module *dm = dwfl_report_elf(d, base_name(m->path), m->path, -1, m->bias, true);
    if (dwfl_report_end(d, NULL, NULL) != 0 || !dm) {
        dwfl_end(d);
        return;
    }
    m->dwfl = d;
    m->dm = dm;
    m->state = 1;
}

/* ---- names ---- */

/* Without libstdc++: the allocation functions by name at least. */
static const char *const known_mangled[][2] = {
    { "_Znwm", "operator new(unsigned long)" },
    { "_Znam", "operator new[](unsigned long)" },
    { "_ZnwmRKSt9nothrow_t", "operator new(unsigned long, std::nothrow_t const&)" },
    { "_ZnamRKSt9nothrow_t", "operator new[](unsigned long, std::nothrow_t const&)" },
    { "_ZnwmSt11align_val_t", "operator new(unsigned long, std::align_val_t)" },
    { "_ZnamSt11align_val_t", "operator new[](unsigned long, std::align_val_t)" },
    { "_ZnwmSt11align_val_tRKSt9nothrow_t", "operator new(unsigned long, std::align_val_t, std::nothrow_t const&)" },
    { "_ZnamSt11align_val_tRKSt9nothrow_t", "operator new[](unsigned long, std::align_val_t, std::nothrow_t const&)" },
    { "_Znwj", "operator new(unsigned int)" },
    { "_Znaj", "operator new[](unsigned int)" },
    { "_ZdlPv", "operator delete(void*)" },
    { "_ZdaPv", "operator delete[](void*)" },
    { "_ZdlPvm", "operator delete(void*, unsigned long)" },
    { "_ZdaPvm", "operator delete[](void*, unsigned long)" },
};

static const char *demangle(struct mra_symbols *s, const char *name)
{
    if (!name)
        return NULL;
    if (!__cxa_demangle && name[0] == '_' && name[1] == 'Z')
        for (size_t i = 0; i < sizeof known_mangled / sizeof *known_mangled; i++)
            if (strcmp(name, known_mangled[i][0]) == 0)
                return intern(&s->strs, known_mangled[i][1]);
    if (name[0] == '_' && name[1] == 'Z' && __cxa_demangle) {
        int status = -1;
        char *d = __cxa_demangle(name, NULL, NULL, &status);
        if (d && status == 0) {
            const char *r = intern(&s->strs, d);
            free(d);
            return r;
        }
        free(d);
    }
    return intern(&s->strs, name);
}

static bool is_mangled(const char *n)
{
    return n && n[0] == '_' && n[1] == 'Z';
}

/* The name of a subprogram or inlined subroutine DIE (its abstract
 * origin's, for an inlined one). */
static const char *die_name(struct mra_symbols *s, Dwarf_Die *die)
{
    Dwarf_Attribute at;
    const char *link = NULL, *name = NULL;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &at) || dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &at))
        link = dwarf_formstring(&at);
    if (dwarf_attr_integrate(die, DW_AT_name, &at))
        name = dwarf_formstring(&at);
    if (link && __cxa_demangle) {
        const char *d = demangle(s, link);
        if (d && !is_mangled(d))
            return d;
    }
    if (name)
        return intern(&s->strs, name);
    return link ? intern(&s->strs, link) : NULL;
}

static void resolve(struct mra_symbols *s, struct entry *e)
{
    uint64_t addr = e->addr;
    struct mod *m = find_mod(s, addr);
    if (m && m->state == 0)
        open_mod(s, m);
    if (!m || m->state != 1) {
        e->frames = frames_alloc(s, 1);
        if (!e->frames)
            return;
        e->n = 1;
        e->frames[0] = (struct mra_frame){ .addr = addr, .module = m ? m->path : NULL,
                                           .offset = m ? addr - m->bias : 0 };
        return;
    }

    /* the symbol table */
    GElf_Off off = 0;
    const char *symname = sym_at(m, addr, &off);
#ifdef MRA_SYMBOLS_CHECK
    {
        GElf_Off o2 = 0;
        GElf_Sym s2;
        const char *n2 = dwfl_module_addrinfo(m->dm, addr, &o2, &s2, NULL, NULL, NULL);
        if ((n2 == NULL) != (symname == NULL) || (n2 && (strcmp(n2, symname) != 0 || o2 != off)))
            fprintf(stderr, "symbols check: %s+%#llx: libdwfl %s+%#llx, the table %s+%#llx\n", m->path,
                    (unsigned long long)(addr - m->bias), n2 ? n2 : "-", (unsigned long long)o2,
                    symname ? symname : "-", (unsigned long long)off);
    }
#endif
    Dwarf_Addr mbias = 0;

    /* the inline chain */
    enum { MAXI = 32 };
    Dwarf_Die fn[MAXI];
    int nfn = 0;
    Dwarf_Die *scopes = NULL;
    Dwarf_Die *cu = dwfl_module_addrdie(m->dm, addr, &mbias);
    Dwarf_Die cu_buf;
    bool by_ranges = false;
    if (!cu) {
        cu = cu_by_ranges(m, addr, &cu_buf, &mbias);
        by_ranges = cu != NULL;
    }

    /* the line table, only where a compilation unit covers the address
     * (else libdw may answer with the last line of a neighbouring unit:
     * _start from crt1.o, code without debug information) */
    const char *file = NULL;
    int line = 0;
    Dwfl_Line *dl = cu && !by_ranges ? dwfl_module_getsrc(m->dm, addr) : NULL;
    Dwarf_Addr laddr = 0;
    if (dl) {
        file = dwfl_lineinfo(dl, &laddr, &line, NULL, NULL, NULL);
    } else if (by_ranges) {
        /* libdwfl's line lookup goes through the aranges too: the unit's own table */
        Dwarf_Line *ln = dwarf_getsrc_die(cu, addr - mbias);
        if (ln && dwarf_lineaddr(ln, &laddr) == 0 && dwarf_lineno(ln, &line) == 0) {
            file = dwarf_linesrc(ln, NULL, NULL);
            laddr += mbias;
        }
    }
    /* a row before the function's start is another function's */
    if (file && symname && laddr < addr - off) {
        file = NULL;
        line = 0;
    }
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    if (cu) {
        int ns = dwarf_getscopes(cu, addr - mbias, &scopes);
        /* dwarf_getscopes follows an inlined instance to its abstract
         * origin's scopes; the concrete chain of DIEs around the innermost
         * scope (as eu-addr2line -i does it) has the functions it was
         * inlined into */
        if (ns > 0) {
            Dwarf_Addr b2;
            Dwarf *dw = dwfl_module_getdwarf(m->dm, &b2);
            Dwarf_Die inner;
            Dwarf_Die *chain = NULL;
            if (dw && dwarf_offdie(dw, dwarf_dieoffset(&scopes[0]), &inner)) {
                int nc = dwarf_getscopes_die(&inner, &chain);
                if (nc > 0) {
                    free(scopes);
                    scopes = chain;
                    ns = nc;
                } else {
                    free(chain);
                }
            }
        }
        for (int i = 0; i < ns && nfn < MAXI; i++) {
            int tag = dwarf_tag(&scopes[i]);
            if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram) {
                fn[nfn++] = scopes[i];
                if (tag == DW_TAG_subprogram)
                    break;
            }
        }
        if (nfn > 1 && dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
            files = NULL;
    }
    unsigned n = nfn > 0 ? (unsigned)nfn : 1;
    e->frames = frames_alloc(s, n);
    if (!e->frames) {
        free(scopes);
        return;
    }
    e->n = n;
    const char *mpath = m->path;
    const char *outer = NULL;
    char vbuf[512];
    if (symname) {
        /* "f@@GLIBC_2.34", "f@GLIBC_2.2.5": the version is no part of the name */
        const char *at = strchr(symname, '@');
        if (at && (size_t)(at - symname) < sizeof vbuf) {
            memcpy(vbuf, symname, (size_t)(at - symname));
            vbuf[at - symname] = '\0';
            symname = vbuf;
        }
        outer = demangle(s, symname);
        /* a clone ("f.constprop.0", "f.cold") or a mangled name: DWARF's name reads better */
        if ((is_mangled(outer) || (!is_mangled(symname) && strchr(symname, '.'))) && nfn > 0) {
            const char *dn = die_name(s, &fn[nfn - 1]);
            if (dn)
                outer = dn;
        }
    } else if (nfn > 0) {
        outer = die_name(s, &fn[nfn - 1]);
    }
    const char *cur_file = file ? intern(&s->strs, file) : NULL;
    unsigned cur_line = line > 0 ? (unsigned)line : 0;
    for (unsigned i = 0; i < n; i++) {
        struct mra_frame *f = &e->frames[i];
        f->addr = addr;
        f->module = mpath;
        f->offset = symname ? off : addr - m->bias;
        f->function = i + 1 == n ? outer : die_name(s, &fn[i]);
        if (!f->function && i + 1 < n)
            f->function = outer;
        f->file = cur_file;
        f->line = cur_line;
        if (i + 1 < n) {
            /* the next frame out is at the call of this inlined one */
            Dwarf_Attribute at;
            Dwarf_Word cf = 0, cl = 0;
            cur_file = NULL;
            cur_line = 0;
            if (dwarf_attr(&fn[i], DW_AT_call_file, &at) && dwarf_formudata(&at, &cf) == 0 && files && cf < nfiles)
                cur_file = intern(&s->strs, dwarf_filesrc(files, cf, NULL, NULL));
            if (dwarf_attr(&fn[i], DW_AT_call_line, &at) && dwarf_formudata(&at, &cl) == 0)
                cur_line = (unsigned)cl;
        }
    }
    if (!symname && !outer)
        e->frames[n - 1].offset = addr - m->bias;
    free(scopes);
}

struct mra_symbols *mra_symbols_open(const struct mra_profile *p)
{
    struct mra_symbols *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->mods = calloc(p->nmodules ? p->nmodules : 1, sizeof *s->mods);
    s->maxhi = calloc(p->nmodules ? p->nmodules : 1, sizeof *s->maxhi);
    if (!s->mods || !s->maxhi)
        goto fail;
    for (size_t i = 0; i < p->nmodules; i++) {
        const struct mra_raw_module *r = &p->modules[i];
        const char *path = r->path;
        /* dl_iterate_phdr names the main program "" */
        if (!path || !*path)
            path = p->h.program;
        /* the same module seen twice (at a dlopen and at exit): once */
        bool dup = false;
        for (size_t j = 0; j < s->nmods && !dup; j++)
            dup = s->mods[j].lo == r->lo && s->mods[j].hi == r->hi && s->mods[j].bias == r->bias &&
                  strcmp(s->mods[j].path, path) == 0;
        if (dup || r->hi <= r->lo)
            continue;
        s->mods[s->nmods++] = (struct mod){ .bias = r->bias, .lo = r->lo, .hi = r->hi, .order = i,
                                            .path = intern(&s->strs, path) };
    }
    qsort(s->mods, s->nmods, sizeof *s->mods, cmp_mod);
    for (size_t i = 0; i < s->nmods; i++)
        s->maxhi[i] = i && s->maxhi[i - 1] > s->mods[i].hi ? s->maxhi[i - 1] : s->mods[i].hi;

    size_t total = 0;
    for (size_t i = 0; i < p->nsites; i++)
        total += p->sites[i].s.nframes;
    s->cap = 1024;
    while (s->cap < 2 * total)
        s->cap *= 2;
    s->tab = calloc(s->cap, sizeof *s->tab);
    if (!s->tab)
        goto fail;
    for (size_t i = 0; i < p->nsites; i++)
        for (uint32_t k = 0; k < p->sites[i].s.nframes; k++)
            insert(s, p->sites[i].frames[k]);
    size_t done = 0;
    for (size_t j = 0; j < s->cap; j++)
        if (s->tab[j].used) {
            resolve(s, &s->tab[j]);
            if ((++done & 1023) == 0)
                mra_progress("symbols", done, s->n);
        }
    mra_progress("symbols", s->n, s->n);
    return s;
fail:
    mra_symbols_free(s);
    return NULL;
}

const struct mra_frame *mra_symbols_inline(struct mra_symbols *s, uint64_t addr, unsigned *n)
{
    struct entry *e = s ? lookup(s, addr) : NULL;
    if (!e || !e->frames) {
        if (s) {
            s->unknown = (struct mra_frame){ .addr = addr };
            *n = 1;
            return &s->unknown;
        }
        *n = 0;
        return NULL;
    }
    *n = e->n;
    return e->frames;
}

const struct mra_frame *mra_symbols_get(struct mra_symbols *s, uint64_t addr)
{
    unsigned n;
    const struct mra_frame *f = mra_symbols_inline(s, addr, &n);
    return f;
}

void mra_symbols_free(struct mra_symbols *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nmods; i++)
        if (s->mods[i].dwfl)
            dwfl_end(s->mods[i].dwfl);
    for (size_t i = 0; i < s->nmods; i++) {
        free(s->mods[i].cur);
        free(s->mods[i].syms);
    }
    free(s->mods);
    free(s->maxhi);
    free(s->tab);
    for (size_t i = 0; i < s->nfchunks; i++)
        free(s->fchunks[i]);
    free(s->fchunks);
    strtab_free(&s->strs);
    free(s);
}
