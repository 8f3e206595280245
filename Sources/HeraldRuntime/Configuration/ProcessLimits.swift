#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The process's resource limits that configuration defaults derive from.
public enum ProcessLimits {
    /// The soft limit on open file descriptors (`RLIMIT_NOFILE`); 1024, the usual default, if it cannot
    /// be read.
    public static var openFiles: UInt64 {
        var limit = rlimit()
        #if canImport(Glibc)
            let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
            let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0 else { return 1024 }
        return UInt64(limit.rlim_cur)
    }
}
