import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import NIOCore

/// The message status API for operators, behind an `admin.tokens` bearer token:
/// `GET /admin/v1/messages/{id}` answers one message object (404 when the ledger has no such job),
/// `GET /admin/v1/messages?to=&status=&type=&project=&since=&pageSize=&pageToken=` a page of them,
/// newest first (`MessageQuery.parse` for the parameters). Only reads: it never changes a message.
struct MessageRoutes: Sendable {
    let ledger: any MessageLedger
    let admin: AdminAuthorization
    let clock: any WallClock

    func register(on router: Router<HeraldRequestContext>) {
        router.get("/admin/v1/messages/:id") { request, context -> Response in
            guard isAdmin(request) else { return Self.challenge() }
            guard let text = context.parameters.get("id"), let id = UUID(parsing: text), let message = try await ledger.message(id: id) else {
                throw HeraldError(.notFound)
            }
            return Self.json(MessageView.json(message))
        }
        router.get("/admin/v1/messages") { request, _ -> Response in
            guard isAdmin(request) else { return Self.challenge() }
            let parameters = request.uri.queryParameters
            func value(_ name: String) -> String? { parameters.get(name).map { String($0) } }
            let query = try MessageQuery.parse(
                to: value("to").map(Self.repairedDestination), status: value("status"), type: value("type"), project: value("project"),
                since: value("since"), pageSize: value("pageSize"), pageToken: value("pageToken"), now: clock.now)
            return Self.json(MessageView.json(try await ledger.messages(query)))
        }
    }

    private func isAdmin(_ request: Request) -> Bool { admin.isAdmin(authorization: request.headers[.authorization]) }

    /// 401 with the scheme the caller must use.
    static func challenge() -> Response {
        var response = HeraldError.render(
            HeraldError(.unauthenticated, "Request is missing a valid admin token (Authorization: Bearer <admin.tokens entry>)."))
        response.headers[.wwwAuthenticate] = "Bearer"
        return response
    }

    /// A `+` sent unencoded in a query string arrives as a space; an E.164 number never starts with one.
    static func repairedDestination(_ to: String) -> String {
        to.hasPrefix(" ") && to.dropFirst().allSatisfy(\.isNumber) ? "+" + to.dropFirst() : to
    }

    static func json(_ data: Data) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=UTF-8"
        headers[.cacheControl] = "no-store"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
