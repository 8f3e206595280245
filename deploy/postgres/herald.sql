-- A PostgreSQL role and database for Herald. Run once as a superuser:
--   psql -h db.internal -U postgres -v password="'<a long random password>'" -f herald.sql
-- Optional: -v role=herald -v database=herald (the defaults).
-- Herald creates and migrates its tables itself (every process at start-up, under an advisory lock,
-- or `herald-admin store migrate`), so the role owns its database and needs nothing else to run.
\set ON_ERROR_STOP on
\if :{?role}
\else
  \set role herald
\endif
\if :{?database}
\else
  \set database herald
\endif
\if :{?password}
\else
  DO $$ BEGIN RAISE EXCEPTION 'give the role a password: psql -v password="''<password>''" -f herald.sql'; END $$;
\endif

CREATE ROLE :"role" LOGIN PASSWORD :password NOSUPERUSER NOCREATEDB NOCREATEROLE CONNECTION LIMIT 500;
-- Byte order for text: Herald's columns declare it themselves (schema version 11), and a database of its
-- own then sorts the routines' intermediate texts the same way, without the C library's collation.
CREATE DATABASE :"database" OWNER :"role" ENCODING 'UTF8' LC_COLLATE 'C' TEMPLATE template0;
REVOKE ALL ON DATABASE :"database" FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE :"database" TO :"role";
-- Lets herald-api see how long other roles' sessions have held a snapshot on the database (a pg_dump, a
-- report): its gauge herald_store_oldest_snapshot_seconds and `herald-admin store status`. Read-only.
GRANT pg_read_all_stats TO :"role";

\connect :"database"
-- Only Herald's role may create tables in the database's public schema.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
ALTER SCHEMA public OWNER TO :"role";
