// jemalloc (Debian libjemalloc-dev, 5.3). Linking it is what replaces glibc's malloc for the whole
// process (Swift runtime, NIO, SQLite, BoringSSL); Swift only asks whether it serves and its version.
#include <dlfcn.h>
#include <jemalloc/jemalloc.h>

// Whether the process's `malloc` is jemalloc's: not so when a library preloaded before it (LD_PRELOAD)
// defines its own.
static inline int herald_jemalloc_serves_malloc(void) {
    void *process = dlopen(NULL, RTLD_NOW);
    void *jemalloc = dlopen("libjemalloc.so.2", RTLD_NOW | RTLD_NOLOAD);
    int serves = process != NULL && jemalloc != NULL && dlsym(process, "malloc") == dlsym(jemalloc, "malloc");
    if (jemalloc != NULL) dlclose(jemalloc);
    if (process != NULL) dlclose(process);
    return serves;
}

// The linked jemalloc's version ("5.3.0-0-g…"), or NULL if mallctl refuses.
static inline const char *herald_jemalloc_version(void) {
    const char *version = NULL;
    size_t length = sizeof(version);
    if (mallctl("version", &version, &length, NULL, 0) != 0) return NULL;
    return version;
}
