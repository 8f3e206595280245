// SQLite (Debian libsqlite3-dev, 3.40: UPSERT and RETURNING available).
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast macro Swift cannot import: it tells SQLite to copy bound values.
static inline sqlite3_destructor_type herald_sqlite_transient(void) { return SQLITE_TRANSIENT; }

// Extended result codes are macros of macros: give Swift their values.
static inline int herald_sqlite_constraint_unique(void) { return SQLITE_CONSTRAINT_UNIQUE; }
static inline int herald_sqlite_constraint_primarykey(void) { return SQLITE_CONSTRAINT_PRIMARYKEY; }
