/* SPDX-License-Identifier: MIT */
/* tests/test_dlopen.c -- the shared library loaded with dlopen (through a
 * module that links it, tests/dlopen_module.c), as a plugin or a language
 * binding loads it: thread-safe pools work in the thread that loaded it, in
 * a thread that was already running before the load and in one started
 * after it, on their inline paths (each thread's table of caches must hold
 * its initial values in all three), and come back exact. */
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#ifndef MEMRES_DLOPEN_MODULE
#error "MEMRES_DLOPEN_MODULE: the module's path (tests/CMakeLists.txt)"
#endif

static int (*run)(uintptr_t);
static sem_t go;
static int early_result = -1, late_result = -1;

static void *early_main(void *arg) /* runs before the dlopen, uses it after */
{
    (void)arg;
    while (sem_wait(&go) != 0)
        ;
    early_result = run(2000);
    return NULL;
}

static void *late_main(void *arg)
{
    (void)arg;
    late_result = run(3000);
    return NULL;
}

static void test_pools_in_every_thread(void **state)
{
    (void)state;
    assert_int_equal(sem_init(&go, 0, 0), 0);
    pthread_t early, late;
    assert_int_equal(pthread_create(&early, NULL, early_main, NULL), 0);
    void *h = dlopen(MEMRES_DLOPEN_MODULE, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        fail_msg("dlopen: %s", dlerror());
    /* (ISO C has no conversion from dlsym's void * to a function pointer:
     * the bytes are copied, as POSIX has it work) */
    void *p_init = dlsym(h, "module_init"), *p_fini = dlsym(h, "module_fini"), *p_run = dlsym(h, "module_run");
    assert_non_null(p_init);
    assert_non_null(p_fini);
    assert_non_null(p_run);
    int (*init)(void), (*fini)(void);
    memcpy(&init, &p_init, sizeof init);
    memcpy(&fini, &p_fini, sizeof fini);
    memcpy(&run, &p_run, sizeof run);
    assert_int_equal(init(), 0);
    assert_int_equal(run(1000), 0);
    sem_post(&go);
    assert_int_equal(pthread_join(early, NULL), 0);
    assert_int_equal(pthread_create(&late, NULL, late_main, NULL), 0);
    assert_int_equal(pthread_join(late, NULL), 0);
    assert_int_equal(early_result, 0);
    assert_int_equal(late_result, 0);
    assert_int_equal(fini(), 0);
    assert_int_equal(dlclose(h), 0);
    sem_destroy(&go);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_pools_in_every_thread)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
