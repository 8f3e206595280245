// Shims for rabbitmq-c 0.11 (Debian librabbitmq-dev).
// amqp.h only forward-declares struct timeval, so <sys/time.h> comes first.
#include <sys/time.h>
#include <amqp.h>
#include <amqp_framing.h>
#include <amqp_tcp_socket.h>
#include <amqp_ssl_socket.h>

// amqp_login_with_properties is C-variadic, which Swift cannot call.
static inline amqp_rpc_reply_t herald_amqp_login_plain(amqp_connection_state_t state, const char *vhost,
                                                       int channel_max, int frame_max, int heartbeat,
                                                       const amqp_table_t *properties, const char *user,
                                                       const char *password) {
    return amqp_login_with_properties(state, vhost, channel_max, frame_max, heartbeat, properties,
                                      AMQP_SASL_METHOD_PLAIN, user, password);
}
