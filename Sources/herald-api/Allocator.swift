import CJemalloc

/// herald-api is linked against jemalloc instead of using glibc's malloc.
///
/// A send allocates and frees a few hundred small blocks across the event loops, the cooperative
/// pool, the SQLite writer and the AMQP thread; blocks freed on another thread than the one that
/// allocated them miss glibc's per-thread cache and take its arena lock (`_int_free`,
/// `malloc_consolidate`: about 9 % of herald-api's profile under c64). jemalloc's thread caches and
/// arenas save about 5 % of herald-api's CPU per send, for about 4 MiB more peak memory. The workers keep glibc: theirs is 52–54 MiB against a 60 MiB target, and jemalloc
/// took one to 59 MiB in a 50,000-job drain. `MALLOC_CONF` tunes it at start (jemalloc's own variable).
enum Allocator {
    /// What the start-up line reports, so an operator can see which allocator serves the process.
    static var description: String {
        guard herald_jemalloc_serves_malloc() != 0 else { return "not jemalloc (another malloc was preloaded)" }
        return herald_jemalloc_version().map { "jemalloc " + String(cString: $0) } ?? "jemalloc"
    }
}
