import Hummingbird
import Metrics
import Synchronization

/// `herald_api_requests_total{route,method,status}` and `herald_api_request_duration_seconds{route,
/// method,status}` for every request herald-api answers, by route template as Hummingbird writes it
/// (`/v1/{operation}`, `/admin/v1/messages/{id}`; `NotFound` for a path no route takes, so a scan of
/// random paths adds one series, not one per path), the labels Hummingbird's own metrics middleware
/// gives its `http.route`. Outermost, around the operation fast path and the router alike.
///
/// The handles are kept per label set (`Handles`): made through the metrics factory on every request
/// they would cost a registry lookup under its lock and an allocation each.
struct RequestMetrics<Responder: HTTPResponder>: HTTPResponder where Responder.Context == HeraldRequestContext {
    typealias Context = HeraldRequestContext

    let responder: Responder
    let handles = Handles()

    init(_ responder: Responder) {
        self.responder = responder
    }

    func respond(to request: Request, context: Context) async throws -> Response {
        let started = ContinuousClock.now
        do {
            let response = try await responder.respond(to: request, context: context)
            record(request, context, status: response.status.code, since: started)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            record(request, context, status: status, since: started)
            throw error
        }
    }

    private func record(_ request: Request, _ context: Context, status: Int, since started: ContinuousClock.Instant) {
        let elapsed = (ContinuousClock.now - started).components
        let (counter, timer) = handles.handles(route: context.endpointPath ?? "NotFound", method: request.method.rawValue, status: status)
        counter.increment()
        timer.recordNanoseconds(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
    }
}

/// The counter and timer of each label set, made once. Not the generic `HandleCache`: this runs on
/// every request, and a cache declared in this module is specialised here (one struct key, both handles
/// in one lookup) where the generic one paid for runtime metadata and an array key per call.
final class Handles: Sendable {
    struct Key: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    private let made = Mutex<[Key: (Counter, Timer)]>([:])

    func handles(route: String, method: String, status: Int) -> (Counter, Timer) {
        let key = Key(route: route, method: method, status: status)
        return made.withLock { made in
            if let handles = made[key] { return handles }
            let labels = [("route", route), ("method", method), ("status", String(status))]
            let handles = (
                Counter(label: "herald_api_requests_total", dimensions: labels),
                Timer(label: "herald_api_request_duration_seconds", dimensions: labels, preferredDisplayUnit: .seconds)
            )
            made[key] = handles
            return handles
        }
    }
}
