// SQLite (Debian libsqlite3-dev, 3.40: UPSERT and RETURNING available).
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro Swift cannot import: it tells SQLite to copy bound values.
static inline sqlite3_destructor_type herald_sqlite_transient(void) { return SQLITE_TRANSIENT; }

// Extended result codes are macros of macros: give Swift their values.
static inline int herald_sqlite_constraint_unique(void) { return SQLITE_CONSTRAINT_UNIQUE; }
static inline int herald_sqlite_constraint_primarykey(void) { return SQLITE_CONSTRAINT_PRIMARYKEY; }
static inline int herald_sqlite_constraint_notnull(void) { return SQLITE_CONSTRAINT_NOTNULL; }

#include <stdint.h>
#include <unistd.h>

// Waits for another process's write lock in short steps: 100 µs, growing to 1 ms, for about
// `timeout_ms` in all. SQLite's own busy timeout sleeps 1, 2, 5, 10, 15, 20, 25, 50, 100 ms …, so a
// writer that arrives just after another process took the lock waited tens of milliseconds for a
// lock held for one.
static inline int herald_sqlite_busy(void *context, int count) {
    long timeout_ms = (long)(intptr_t)context;
    if (count > timeout_ms + 5) return 0;
    usleep(count < 10 ? 100 * (count + 1) : 1000);
    return 1;
}

static inline void herald_sqlite_set_busy_handler(sqlite3 *db, int timeout_ms) {
    sqlite3_busy_handler(db, herald_sqlite_busy, (void *)(intptr_t)timeout_ms);
}

// Process-wide settings, before the first connection opens (sqlite3_config is variadic, which Swift
// cannot call). Memory statistics off: with them on, every allocation SQLite makes takes a global
// mutex (measured: 7 % of herald-api's SQLite thread under load); Herald never reads them.
static inline int herald_sqlite_configure(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
