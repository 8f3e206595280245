import HeraldCore
import HeraldStore
import Hummingbird
import Logging
import NIOCore

/// Every failure leaves in Identity Toolkit's envelope: router 404s, oversized bodies and unexpected
/// errors included. Unexpected errors are logged with the request id and answered without detail.
struct IdentityToolkitErrorMiddleware: RouterMiddleware {
    typealias Context = HeraldRequestContext

    /// What a body over `WireBody.maximumSize` gets.
    static let tooLarge = HeraldError(.requestTooLarge, "Request payload size exceeds the limit: \(WireBody.maximumSize) bytes.")

    /// What a request gets while the store cannot be reached.
    static let storeUnavailable = HeraldError(.unavailable, "The service is temporarily unavailable. Try again later.", retryAfter: .seconds(5))

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HeraldError {
            return HeraldError.render(error)
        } catch let error as StoreError where error.kind == .unavailable || error.kind == .retry {
            // The database is down or overloaded, not the request wrong: the client may retry.
            context.logger.error("store unavailable", metadata: ["error": .string(error.message)])
            return HeraldError.render(Self.storeUnavailable)
        } catch is NIOTooManyBytesError {
            return HeraldError.render(Self.tooLarge)
        } catch let error as HTTPError {
            switch error.status {
            case .notFound: return HeraldError.render(HeraldError(.notFound))
            case .contentTooLarge: return HeraldError.render(Self.tooLarge)
            default:
                if error.status.code < 500 { return HeraldError.render(HeraldError(.invalidArgument, error.body ?? "Bad request.")) }
                context.logger.error("request failed", metadata: ["error": .string("\(error)")])
                return HeraldError.render(HeraldError(.internalError))
            }
        } catch {
            context.logger.error("request failed", metadata: ["error": .string("\(error)")])
            return HeraldError.render(HeraldError(.internalError))
        }
    }
}
