import Foundation
import HeraldTesting

/// What Herald's PostgreSQL connections do during a run: executing (or waiting for a core), flushing
/// WAL at commit, waiting for row or advisory locks, other waits, or idle between calls. Sampled from
/// `pg_stat_activity` about every 50 ms by one `psql`, which costs PostgreSQL and psql together about
/// 1.5 % of a core (4 % at every 20 ms, 12–15 % at every 10 ms in two statements).
///
/// It tells apart the two ways PostgreSQL can bound the sends: by its CPU and its commits' flushes, or
/// by the batches of two herald-api processes queueing for the limit rows every send updates (project,
/// country, client address).
///
/// Each sample is a statement of its own, and so a transaction of its own. A single DO block looping
/// for the run held one snapshot throughout, which kept PostgreSQL from pruning the dead versions of
/// those hot rows: every update then walked a growing chain, and one herald-api fell from 1,840
/// sends/s to 740, PostgreSQL's CPU at 94 % (docs/several-machines.md).
struct PostgresWaits {
    /// Connections in each state, averaged over the samples.
    var executing: Double
    var flushingWAL: Double
    var waitingForLocks: Double
    var otherWaits: Double
    var idle: Double
    var samples: Int

    var line: String {
        String(
            format:
                "    PostgreSQL meanwhile, Herald's connections on average (%d samples): executing %.2f, flushing WAL %.2f, waiting for locks %.2f, other waits %.2f, idle %.2f",
            samples, executing, flushingWAL, waitingForLocks, otherWaits, idle)
    }

    /// Samples for about `seconds`; nil (with a line saying so) when psql or the database is not there.
    static func sample(seconds: Int) async -> PostgresWaits? {
        guard let url = try? TestStore.postgresURL(), let psql = psqlPath else {
            print("    PostgreSQL waits not sampled: no psql or no database URL")
            return nil
        }
        let script = NSTemporaryDirectory() + "herald-bench-waits-\(UUID().uuidString.prefix(8)).sql"
        defer { try? FileManager.default.removeItem(atPath: script) }
        let text = String(repeating: "SELECT s.*, pg_sleep(0.05) FROM (\(query)) s;\n", count: seconds * 19)
        guard FileManager.default.createFile(atPath: script, contents: Data(text.utf8)) else { return nil }
        let line = "\(psql) -X -q -A -t -F ' ' -v ON_ERROR_STOP=1 -d \(shellQuoted(url)) -f \(shellQuoted(script))"
        // The error would repeat the line, and the URL in it holds the password.
        guard let output = try? await shell(line), let parsed = parse(output) else {
            print("    PostgreSQL waits not sampled: psql failed")
            return nil
        }
        return parsed
    }

    /// One line of five counts per sample (and pg_sleep's empty column).
    static func parse(_ output: String) -> PostgresWaits? {
        var sums = [Double](repeating: 0, count: 5)
        var samples = 0
        for line in output.split(separator: "\n") {
            let numbers = line.split(separator: " ").compactMap { Double($0) }
            guard numbers.count == 5 else { continue }
            for index in 0..<5 { sums[index] += numbers[index] }
            samples += 1
        }
        guard samples > 0 else { return nil }
        let n = Double(samples)
        return PostgresWaits(
            executing: sums[0] / n, flushingWAL: sums[1] / n, waitingForLocks: sums[2] / n, otherWaits: sums[3] / n, idle: sums[4] / n,
            samples: samples)
    }

    /// WAL waits are the commit's flush (`IO` WALSync and WALWrite) and the queue for it (`LWLock`
    /// WALWrite); `Lock` waits are heavyweight locks: rows (`transactionid`, `tuple`) and advisory ones.
    static let query = """
        SELECT count(*) FILTER (WHERE state = 'active' AND wait_event_type IS NULL),
          count(*) FILTER (WHERE state = 'active' AND wait_event IN ('WALSync', 'WALWrite')),
          count(*) FILTER (WHERE state = 'active' AND wait_event_type = 'Lock'),
          count(*) FILTER (WHERE state = 'active' AND wait_event_type <> 'Lock' AND wait_event NOT IN ('WALSync', 'WALWrite')),
          count(*) FILTER (WHERE state IS DISTINCT FROM 'active')
        FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()
        """

    /// Debian's psql: on PATH through its wrapper, or in the server's own directory.
    static var psqlPath: String? {
        let candidates =
            (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/psql" }
            + ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).sorted().reversed().map {
                "/usr/lib/postgresql/\($0)/bin/psql"
            }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
