// Shims for libcurl (Debian libcurl4-openssl-dev): curl_easy_setopt, curl_easy_getinfo and
// curl_multi_setopt are C-variadic, which Swift cannot call, so each argument type gets a wrapper.
#include <curl/curl.h>

typedef size_t (*herald_curl_data_callback)(char *, size_t, size_t, void *);

static inline CURLcode herald_curl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_curl_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_curl_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_curl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_curl_setopt_off_t(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode herald_curl_setopt_callback(CURL *h, CURLoption o, herald_curl_data_callback v) { return curl_easy_setopt(h, o, v); }

static inline CURLcode herald_curl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode herald_curl_getinfo_off_t(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode herald_curl_getinfo_pointer(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }

static inline CURLMcode herald_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
