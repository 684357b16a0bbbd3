/* SPDX-License-Identifier: MIT */
/* advise/record/modules.c -- the loaded modules, for the profile: each
 * seen at a site's creation by _dl_find_object (so that a module dlclosed
 * before exit still resolves), and all those loaded at exit
 * (dl_iterate_phdr).  Under g_mod_mu. */
#include <link.h>

#include "record.h"

static void module_add_locked(uint64_t bias, uint64_t lo, uint64_t hi, const char *path)
{
    for (size_t i = 0; i < g_nmods; i++)
        if (g_mods[i].lo == lo && g_mods[i].bias == bias)
            return;
    if (g_nmods == g_capmods) {
        size_t nc = g_capmods ? g_capmods * 2 : 32;
        struct module *m = mrr_imalloc(nc * sizeof *m);
        if (!m)
            return;
        if (g_mods)
            memcpy(m, g_mods, g_nmods * sizeof *m);
        mrr_ifree(g_mods, g_capmods * sizeof *m);
        g_mods = m;
        g_capmods = nc;
    }
    size_t len = strlen(path);
    char *s = mrr_imalloc(len + 1);
    if (!s)
        return;
    memcpy(s, path, len);
    g_mods[g_nmods++] = (struct module){bias, lo, hi, s, (uint32_t)len};
}

static bool module_known_locked(uint64_t a)
{
    for (size_t i = 0; i < g_nmods; i++)
        if (a >= g_mods[i].lo && a < g_mods[i].hi)
            return true;
    return false;
}

void mrr_modules_note(const uint64_t *fr, unsigned nf)
{
    pthread_mutex_lock(&g_mod_mu);
    for (unsigned i = 0; i < nf; i++) {
        if (module_known_locked(fr[i]))
            continue;
        struct dl_find_object fo;
        if (_dl_find_object((void *)(uintptr_t)fr[i], &fo) != 0 || !fo.dlfo_link_map)
            continue;
        const char *name = fo.dlfo_link_map->l_name;
        if (!name || !*name)
            name = g_exe;
        module_add_locked((uint64_t)fo.dlfo_link_map->l_addr, (uint64_t)(uintptr_t)fo.dlfo_map_start,
                          (uint64_t)(uintptr_t)fo.dlfo_map_end, name);
    }
    pthread_mutex_unlock(&g_mod_mu);
}

int mrr_phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t a = (uint64_t)info->dlpi_addr + ph->p_vaddr;
        a &= ~(uint64_t)(g_pagesize - 1);
        uint64_t b = (uint64_t)info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        b = (b + g_pagesize - 1) & ~(uint64_t)(g_pagesize - 1);
        if (a < lo)
            lo = a;
        if (b > hi)
            hi = b;
    }
    if (lo >= hi)
        return 0;
    const char *name = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : g_exe;
    pthread_mutex_lock(&g_mod_mu);
    bool known = false;
    for (size_t i = 0; i < g_nmods; i++)
        if (g_mods[i].bias == (uint64_t)info->dlpi_addr && strcmp(g_mods[i].path, name) == 0)
            known = true;
    if (!known)
        module_add_locked((uint64_t)info->dlpi_addr, lo, hi, name);
    pthread_mutex_unlock(&g_mod_mu);
    return 0;
}
