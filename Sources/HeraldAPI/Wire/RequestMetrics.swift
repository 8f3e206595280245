import HeraldCore
import Hummingbird
import Metrics

/// `herald_api_requests_total{route,method,status}` and `herald_api_request_duration_seconds{route,
/// method,status}` for every request herald-api answers, by route template as Hummingbird writes it
/// (`/v1/{operation}`, `/admin/v1/messages/{id}`; `NotFound` for a path no route takes, so a scan of
/// random paths adds one series, not one per path), the labels Hummingbird's own metrics middleware
/// gives its `http.route`. Outermost, around the operation fast path and the router alike.
///
/// The handles are kept per label set (`HandleCache`): made through the metrics factory on every
/// request they would cost a registry lookup under its lock and an allocation each.
struct RequestMetrics<Responder: HTTPResponder>: HTTPResponder where Responder.Context == HeraldRequestContext {
    typealias Context = HeraldRequestContext

    let responder: Responder
    let counters = HandleCache<Counter>()
    let timers = HandleCache<Timer>()

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
        let route = context.endpointPath ?? "NotFound"
        let method = request.method.rawValue
        let code = String(status)
        counters.handle(route, method, code) {
            Counter(label: "herald_api_requests_total", dimensions: [("route", route), ("method", method), ("status", code)])
        }.increment()
        let elapsed = (ContinuousClock.now - started).components
        timers.handle(route, method, code) {
            Timer(
                label: "herald_api_request_duration_seconds", dimensions: [("route", route), ("method", method), ("status", code)],
                preferredDisplayUnit: .seconds)
        }.recordNanoseconds(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
    }
}
