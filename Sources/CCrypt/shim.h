// libxcrypt (Debian libcrypt-dev): bcrypt verification for imported password hashes. crypt_rn writes
// into caller-owned storage, so concurrent sign-ins never share crypt's static buffer.
#include <crypt.h>
#include <stdlib.h>
#include <string.h>

// Hashes `phrase` with the salt and cost in `setting` (a whole `$2b$…` hash); 0 on success, with the
// result in `out` (at least CRYPT_OUTPUT_SIZE bytes).
static inline int herald_crypt(const char *phrase, const char *setting, char *out) {
    struct crypt_data *data = calloc(1, sizeof(struct crypt_data));
    if (data == NULL) return -1;
    char *result = crypt_rn(phrase, setting, data, (int)sizeof(struct crypt_data));
    int status = -1;
    if (result != NULL && result[0] != '*') {
        strncpy(out, result, CRYPT_OUTPUT_SIZE - 1);
        out[CRYPT_OUTPUT_SIZE - 1] = 0;
        status = 0;
    }
    explicit_bzero(data, sizeof(struct crypt_data));
    free(data);
    return status;
}
