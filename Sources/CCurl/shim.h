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

// The socket interface (curl_multi_socket_action): libcurl says which sockets to watch and when to
// call back; the caller's epoll set does the watching (Swift's Glibc module has no epoll or eventfd).
#include <sys/epoll.h>
#include <sys/eventfd.h>
typedef int (*herald_curl_socket_callback)(CURL *, curl_socket_t, int, void *, void *);
typedef int (*herald_curl_timer_callback)(CURLM *, long, void *);
static inline CURLMcode herald_curl_multi_setopt_pointer(CURLM *m, CURLMoption o, void *v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode herald_curl_multi_setopt_socket_callback(CURLM *m, herald_curl_socket_callback v) {
    return curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, v);
}
static inline CURLMcode herald_curl_multi_setopt_timer_callback(CURLM *m, herald_curl_timer_callback v) {
    return curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, v);
}
