import Foundation
import HTTPTypes
import HeraldAMQP
import HeraldChannels
import HeraldCore
import HeraldCurl
import HeraldRuntime
import Hummingbird
import NIOCore

/// The status page for people, at `/admin/` on herald-api: queues with depth and the age of the
/// oldest waiting job, workers with their health, which herald-api runs housekeeping, recent messages with a search by number or email and a
/// per-message view, dead letters with replay (one or all), prefix blocks with lift, and a limits
/// lookup. Server-rendered HTML, no JavaScript. Behind an admin token: a bearer header, or a login form
/// that sets an HttpOnly, SameSite=Strict session cookie (`AdminSession`); every form that changes
/// something carries a CSRF token. Everything printed is escaped; destinations are masked.
struct StatusPage: Sendable {
    let store: any HeraldStoreProtocol
    let broker: (any BrokerConsole)?
    let session: AdminSession
    let configuration: HeraldConfiguration
    let probe: CurlClient
    let clock: any WallClock

    /// How the caller proved it is an admin.
    enum Caller {
        case bearer
        case session(AdminSession.Presented)

        var cookie: String? {
            if case .session(let presented) = self { presented.cookie } else { nil }
        }
    }

    /// Every login is answered this long after it arrived, whatever the outcome: the time taken says
    /// nothing of whether the token was right or the address over its limit.
    static let loginAnswerTime = Duration.milliseconds(250)

    func register(on router: Router<HeraldRequestContext>) {
        // Hummingbird routes /admin and /admin/ alike.
        router.get("/admin/") { request, _ -> Response in
            guard let caller = try await caller(of: request) else { return Self.html(Self.loginPage(problem: nil)) }
            return Self.html(await dashboard(request, caller: caller))
        }
        router.post("/admin/login") { request, context -> Response in
            let answerAt = ContinuousClock.now + Self.loginAnswerTime
            do {
                let response = try await login(request, context)
                try? await Task.sleep(until: answerAt)
                return response
            } catch {
                try? await Task.sleep(until: answerAt)
                throw error
            }
        }
        router.post("/admin/logout") { request, _ -> Response in
            // Ends the session in the store: every copy of the cookie stops working, not just this browser's.
            if case .session(let presented) = try await authorizedForm(request).1 {
                _ = try await store.deleteAdminSession(hash: presented.hash)
            }
            var response = Self.redirect("/admin/")
            response.headers[.setCookie] = "\(AdminSession.cookieName)=; Path=/admin; HttpOnly; SameSite=Strict; Max-Age=0\(secureFlag)"
            return response
        }
        router.get("/admin/messages/:id") { request, context -> Response in
            guard let caller = try await caller(of: request) else { return Self.redirect("/admin/") }
            guard let text = context.parameters.get("id"), let id = UUID(parsing: text), let message = try await store.message(id: id) else {
                return Self.html(
                    Self.page("Message not found", "<p>No such message in the ledger.</p>", caller: caller, session: session), status: .notFound)
            }
            return Self.html(Self.page("Message \(id.lowercasedText)", Self.messageView(message), caller: caller, session: session))
        }
        router.post("/admin/dead-letters/replay") { request, _ -> Response in
            let (form, caller) = try await authorizedForm(request)
            guard let type = form["type"].flatMap(JobType.init(rawValue:)), let broker else {
                return Self.html(Self.page("Replay", "<p>Nothing to replay (unknown type, or no broker).</p>", caller: caller, session: session))
            }
            let id = form["id"].flatMap { $0.isEmpty ? nil : $0 }
            let before = id == nil ? (try await broker.queues(type).first { $0.name.hasSuffix(".dead") }?.ready ?? 0) : 1
            let store = self.store
            let now = clock.now
            let replayed = try await broker.replay(type, id: id, limit: 10_000) { jobID in
                try await store.recordDelivery(jobID: jobID, status: .pending, reason: "replayed from the status page", now: now)
            }
            let summary =
                id.map { replayed == 1 ? "Replayed \(Self.h($0))." : "No dead-lettered \(type.rawValue) job \(Self.h($0))." }
                ?? "Replayed \(replayed) of \(before) dead-lettered \(type.rawValue) job(s)."
            return Self.html(
                Self.page(
                    "Replay", "<p id=\"replayed\">\(summary)</p><p><a href=\"/admin/#dead-letters\">Back</a></p>", caller: caller, session: session))
        }
        router.post("/admin/blocks/lift") { request, _ -> Response in
            let (form, caller) = try await authorizedForm(request)
            let project = form["project"] ?? ""
            let prefix = form["prefix"] ?? ""
            let lifted = try await store.liftPrefixBlock(projectID: project, prefix: prefix)
            let text = lifted ? "Lifted the block on \(Self.h(prefix)) (\(Self.h(project)))." : "No block on \(Self.h(prefix)) (\(Self.h(project)))."
            return Self.html(
                Self.page("Lift", "<p id=\"lifted\">\(text)</p><p><a href=\"/admin/#blocks\">Back</a></p>", caller: caller, session: session))
        }
    }

    private var secureFlag: String { configuration.admin.cookieSecure ? "; Secure" : "" }

    /// Limited per client address before the token is looked at, so the right token over the limit is
    /// refused too (a guesser learns nothing from which answers are 429).
    func login(_ request: Request, _ context: HeraldRequestContext) async throws -> Response {
        let form = try await Self.form(request)
        let client = ClientAddress.resolve(
            peer: context.remoteAddress.flatMap(IPAddress.init), forwardedFor: request.headers.value(.xForwardedFor),
            trustedProxies: configuration.http.trustedProxies)
        if let client {
            let checks = configuration.limits.adminLoginsPerIP.map {
                LimitCheck(kind: .adminLogin, scope: "admin", subject: client.limitKey, policy: $0)
            }
            if let refusal = try await RateLimiter(store: store).admit(checks, now: clock.now) {
                let seconds = max(1, Int(refusal.retryAfter.seconds.rounded(.up)))
                var response = Self.html(
                    Self.loginPage(
                        problem: "Too many logins from this address (limits.adminLoginsPerIP); try again in \(Self.age(Double(seconds)))."),
                    status: .tooManyRequests)
                response.headers[.retryAfter] = String(seconds)
                return response
            }
        }
        guard let token = form["token"], let opened = session.open(token: token, now: clock.now) else {
            return Self.html(Self.loginPage(problem: "That is not an admin token (admin.tokens)."), status: .unauthorized)
        }
        try await store.insertAdminSession(hash: opened.hash, keyID: opened.keyID, expiresAt: opened.expiresAt)
        var response = Self.redirect("/admin/")
        response.headers[.setCookie] = "\(AdminSession.cookieName)=\(opened.cookie); Path=/admin; HttpOnly; SameSite=Strict\(secureFlag)"
        return response
    }

    /// A bearer admin token, or a session cookie whose session the store still holds for a token still
    /// configured.
    func caller(of request: Request) async throws -> Caller? {
        if AdminAuthorization(tokens: configuration.admin.tokens).isAdmin(authorization: request.headers[.authorization]) { return .bearer }
        guard let presented = session.presented(AdminSession.cookie(in: request.headers[.cookie])) else { return nil }
        guard try await store.adminSession(hash: presented.hash, now: clock.now) == presented.keyID else { return nil }
        return .session(presented)
    }

    /// A POST's form, once the caller is an admin and (with a session cookie) the CSRF token matches.
    func authorizedForm(_ request: Request) async throws -> ([String: String], Caller) {
        guard let caller = try await caller(of: request) else {
            throw HeraldError(.unauthenticated, "Log in at /admin/ or send Authorization: Bearer <admin token>.")
        }
        let form = try await Self.form(request)
        if let cookie = caller.cookie, session.isValidCSRF(form["csrf"], cookie: cookie) == false {
            throw HeraldError(.insufficientPermission, "The form's CSRF token is missing or stale; reload the page.")
        }
        return (form, caller)
    }

    // MARK: the dashboard

    func dashboard(_ request: Request, caller: Caller) async -> String {
        let query = request.uri.queryParameters
        func parameter(_ name: String) -> String? { query.get(name).map { String($0) }.flatMap { $0.isEmpty ? nil : $0 } }
        var sections: [String] = []
        sections.append(await queuesSection())
        sections.append(await housekeepingSection())
        sections.append(await providersSection())
        sections.append(await messagesSection(to: parameter("to"), status: parameter("status")))
        sections.append(await deadLettersSection(caller: caller))
        sections.append(await blocksSection(caller: caller))
        sections.append(await limitsSection(kind: parameter("kind"), subject: parameter("subject"), project: parameter("project")))
        return Self.page("Herald", sections.joined(separator: "\n"), caller: caller, session: session)
    }

    func queuesSection() async -> String {
        var rows: [String] = []
        var workers: [String] = []
        var liveConsumers: [String] = []
        for type in Topology.types(in: configuration) {
            let oldest = (try? await store.oldestWaiting(type: type)).flatMap { $0 }
            let age = oldest.map { Self.age(clock.now.timeIntervalSince($0)) } ?? "none waiting"
            var consumers = "?"
            if let broker {
                do {
                    for queue in try await broker.queues(type) {
                        rows.append(
                            "<tr><td>\(Self.h(queue.name))</td><td class=n>\(queue.ready)</td><td class=n>\(queue.consumers)</td><td>\(queue.name.hasSuffix(".\(type.rawValue)") ? Self.h(age) : "")</td></tr>"
                        )
                        if queue.name.hasSuffix(".\(type.rawValue)") { consumers = String(queue.consumers) }
                    }
                } catch {
                    rows.append("<tr><td colspan=4>\(Self.h(type.rawValue)): the broker did not answer (\(Self.h("\(error)")))</td></tr>")
                }
            }
            let health = await probeWorker(type)
            workers.append("<tr><td>herald-\(type.rawValue)-worker</td><td>\(Self.h(health))</td><td class=n>\(consumers)</td></tr>")
            liveConsumers += await consumerRows(type, oldestWait: oldest.map { clock.now.timeIntervalSince($0) })
        }
        let queues =
            broker == nil
            ? "<p>Broker not connected.</p>"
            : "<table><tr><th>Queue</th><th>Ready</th><th>Consumers</th><th>Oldest waiting job</th></tr>\(rows.joined())</table>"
        return """
            <section id="queues"><h2>Queues</h2>\(queues)</section>
            <section id="workers"><h2>Workers</h2><p class=hint>Health from each worker type's /readyz on this host \
            (http.metricsHost, workers.&lt;type&gt;.metricsPort); consumers count every worker connected to the broker.</p>
            <table><tr><th>Worker</th><th>Here</th><th>Consumers</th></tr>\(workers.joined())</table>
            <h3>Consumers</h3><p class=hint>Every consumer the broker reports, on any host, with what it holds unacknowledged \
            (from amqp.managementUrl). One that holds jobs while its queue's oldest has waited past workers.&lt;type&gt;.stuckAfter \
            is flagged: a stopped or stuck worker keeps what it prefetched.</p>
            \(liveConsumers.isEmpty ? "<p>None reported.</p>" : "<table><tr><th>Queue</th><th>Connection</th><th>From</th><th>Unacked</th><th>Prefetch</th><th></th></tr>\(liveConsumers.joined())</table>")</section>
            """
    }

    /// One row per consumer of `type`'s work queue, flagged when it holds deliveries while the oldest
    /// waiting job is older than `stuckAfter` (the verdict is `StuckConsumer`'s).
    func consumerRows(_ type: JobType, oldestWait: TimeInterval?) async -> [String] {
        guard let broker else { return [] }
        let queue = Topology(configuration: configuration).workQueue(type)
        let stuckAfter = configuration.workers.settings(for: type).stuckAfter
        do {
            guard let consumers = try await broker.consumers(of: queue) else {
                return ["<tr><td>\(Self.h(queue))</td><td colspan=5>set amqp.managementUrl to list consumers on every host</td></tr>"]
            }
            return consumers.map { consumer in
                let flag =
                    StuckConsumer.isStuck(unacknowledged: consumer.unacknowledged, oldestWait: oldestWait, stuckAfter: stuckAfter)
                    ? "<span class=problem>holds \(consumer.unacknowledged ?? 0) while the oldest job waits \(Self.age(oldestWait ?? 0)): stopped or stuck?</span>"
                    : ""
                return
                    "<tr><td>\(Self.h(queue))</td><td>\(Self.h(consumer.connectionName))</td><td>\(Self.h(consumer.peer))</td><td class=n>\(consumer.unacknowledged.map(String.init) ?? "?")</td><td class=n>\(consumer.prefetch)</td><td>\(flag)</td></tr>"
            }
        } catch {
            return ["<tr><td>\(Self.h(queue))</td><td colspan=5>the management API did not answer (\(Self.h("\(error)")))</td></tr>"]
        }
    }

    /// Each SMS provider's breaker, as every sms worker shares it (`herald-admin providers status`).
    func providersSection() async -> String {
        let stored: [String: StoredBreaker]
        do {
            stored = try await store.breakers()
        } catch {
            return "<section id=\"providers\"><h2>SMS providers</h2><p class=problem>the store did not answer (\(Self.h("\(error)")))</p></section>"
        }
        let now = clock.now
        let rows = configuration.sms.providers.map { provider -> String in
            let breaker = stored[provider.name].map { CircuitBreaker(settings: provider.breaker, snapshot: $0.snapshot) }
            let state = breaker?.state ?? .closed
            let (calls, failures) = breaker?.windowCounts(now: now) ?? (0, 0)
            let since = state.since.map(MessageView.timestamp) ?? "-"
            return
                "<tr><td>\(Self.h(provider.name))</td><td>\(provider.kind.rawValue)</td><td>\(state.label)</td><td>\(since)</td><td class=n>\(Int(calls.rounded()))</td><td class=n>\(Int(failures.rounded()))</td></tr>"
        }
        return """
            <section id="providers"><h2>SMS providers</h2><p class=hint>Each provider's breaker, shared by every sms worker; \
            herald-admin providers open|close|reset holds one by hand.</p>
            <table><tr><th>Provider</th><th>Type</th><th>Breaker</th><th>Since</th><th>Calls</th><th>Failures</th></tr>\(rows.joined())</table></section>
            """
    }

    /// Which herald-api purges the store (`HousekeepingTurn`).
    func housekeepingSection() async -> String {
        let held: String
        do {
            held = HousekeepingTurn.describe(try await store.turnHolder(HousekeepingTurn.name), now: clock.now)
        } catch {
            held = "the store did not answer (\(error))"
        }
        return """
            <section id="housekeeping"><h2>Housekeeping</h2><p class=hint>The herald-api that purges expired rows and limit keys \
            (one at a time, whichever holds the store's turn).</p><p>\(Self.h(held))</p></section>
            """
    }

    func probeWorker(_ type: JobType) async -> String {
        let settings = configuration.workers.settings(for: type)
        let url = "http://\(configuration.http.metricsHost):\(settings.metricsPort)/readyz"
        guard let response = try? await probe.perform(CurlHTTPRequest(method: "GET", url: url, headers: [], body: nil, timeout: .seconds(1))) else {
            return "no answer"
        }
        return response.status == 200 ? "ready" : "not ready (HTTP \(response.status))"
    }

    func messagesSection(to: String?, status: String?) async -> String {
        var problem: String?
        var rows: [String] = []
        do {
            let query = try MessageQuery.parse(
                to: to.map(MessageRoutes.repairedDestination), status: status, type: nil, project: nil, since: nil, pageSize: "50", pageToken: nil,
                now: clock.now)
            for message in try await store.messages(query).messages {
                let id = message.id.lowercasedText
                rows.append(
                    "<tr><td>\(Self.h(Timestamp.format(message.createdAt)))</td><td><a href=\"/admin/messages/\(id)\">\(id)</a></td><td>\(message.type.rawValue)</td><td>\(Self.h(message.maskedDestination))</td><td class=\"status \(message.publicStatus.rawValue)\">\(message.publicStatus.rawValue)</td><td class=n>\(message.attempts)</td><td>\(Self.h(message.lastError ?? ""))</td></tr>"
                )
            }
        } catch let error as HeraldError {
            problem = error.message
        } catch {
            problem = "\(error)"
        }
        let statuses = MessageStatus.allCases.filter { $0 != .duplicateSkipped }.map {
            "<option\($0.rawValue == status ? " selected" : "")>\($0.rawValue)</option>"
        }.joined()
        return """
            <section id="messages"><h2>Messages</h2>
            <form method="get" action="/admin/"><label>Number or email <input name="to" value="\(Self.h(to ?? ""))" placeholder="+447700900123"></label>
            <label>Status <select name="status"><option value="">any</option>\(statuses)</select></label> <button>Search</button></form>
            \(problem.map { "<p class=problem>\(Self.h($0))</p>" } ?? "")
            <table id="message-list"><tr><th>Created</th><th>Id</th><th>Type</th><th>To</th><th>Status</th><th>Attempts</th><th>Last error</th></tr>\(rows.joined())</table>
            \(rows.isEmpty ? "<p>No messages.</p>" : "")</section>
            """
    }

    func deadLettersSection(caller: Caller) async -> String {
        guard let broker else { return "<section id=\"dead-letters\"><h2>Dead letters</h2><p>Broker not connected.</p></section>" }
        var parts: [String] = []
        for type in Topology.types(in: configuration) {
            guard let dead = try? await broker.deadLetters(type, limit: 50), dead.isEmpty == false else { continue }
            let rows = dead.map { letter in
                """
                <tr><td>\(Self.h(letter.id))</td><td>\(Self.h(letter.to))</td><td>\(Self.h(letter.failedAt))</td><td>\(Self.h(letter.reason))</td>\
                <td>\(Self.postForm("/admin/dead-letters/replay", ["type": type.rawValue, "id": letter.id], button: "Replay", caller: caller, session: session))</td></tr>
                """
            }
            parts.append(
                """
                <h3>\(type.rawValue) (\(dead.count)\(dead.count == 50 ? "+" : ""))</h3>
                \(Self.postForm("/admin/dead-letters/replay", ["type": type.rawValue], button: "Replay all \(type.rawValue)", caller: caller, session: session))
                <table><tr><th>Job</th><th>To</th><th>Failed at</th><th>Reason</th><th></th></tr>\(rows.joined())</table>
                """)
        }
        return "<section id=\"dead-letters\"><h2>Dead letters</h2>\(parts.isEmpty ? "<p>None.</p>" : parts.joined())</section>"
    }

    func blocksSection(caller: Caller) async -> String {
        let blocks = (try? await store.prefixBlocks(now: clock.now)) ?? []
        let rows = blocks.map { block in
            """
            <tr><td>\(Self.h(block.projectID))</td><td>\(Self.h(block.prefix))</td><td>\(Self.h(Timestamp.format(block.until)))</td><td>\(Self.h(block.reason))</td>\
            <td>\(Self.postForm("/admin/blocks/lift", ["project": block.projectID, "prefix": block.prefix], button: "Lift", caller: caller, session: session))</td></tr>
            """
        }
        return """
            <section id="blocks"><h2>Prefix blocks</h2>\(rows.isEmpty ? "<p>None.</p>" : "<table><tr><th>Project</th><th>Prefix</th><th>Until</th><th>Why</th><th></th></tr>\(rows.joined())</table>")</section>
            """
    }

    func limitsSection(kind: String?, subject: String?, project: String?) async -> String {
        var result = ""
        if let kind, let subject {
            let states = (try? await store.rateStates(kind: kind, subject: LimitCheck.subject(subject, kind: kind), project: project)) ?? []
            let now = clock.now.microsecondsSince1970
            let rows = states.map { state in
                let free = state.tat <= now ? "free now" : "next send in " + Self.age(Double(state.tat - now) / 1_000_000)
                return "<tr><td>\(Self.h(state.key))</td><td>\(Self.h(free))</td></tr>"
            }
            result =
                rows.isEmpty
                ? "<p>No limit state kept for it: it has its full allowance.</p>"
                : "<table><tr><th>Key</th><th>State</th></tr>\(rows.joined())</table>"
        }
        let kinds = ["number", "ip", "email", "project", "country", "prefix"].map { "<option\($0 == kind ? " selected" : "")>\($0)</option>" }
            .joined()
        return """
            <section id="limits"><h2>Limits lookup</h2>
            <form method="get" action="/admin/#limits"><label>Kind <select name="kind">\(kinds)</select></label>
            <label>Subject <input name="subject" value="\(Self.h(subject ?? ""))" placeholder="+447700900123"></label>
            <label>Project <input name="project" value="\(Self.h(project ?? ""))"></label> <button>Look up</button></form>\(result)</section>
            """
    }

    static func messageView(_ message: MessageRecord) -> String {
        let fields: [(String, String?)] = [
            ("Id", message.id.lowercasedText), ("Project", message.project), ("Type", message.type.rawValue),
            ("To", message.maskedDestination),
            ("Status", message.publicStatus.rawValue), ("Attempts", String(message.attempts)), ("Template", message.template),
            ("Locale", message.locale),
            ("Provider", message.provider), ("Provider id", message.providerMessageID), ("Producer", message.producer),
            ("Segments", message.segments.map { "\($0) (\(message.encoding ?? "?"))" }), ("Last error", message.lastError),
            ("Created", Timestamp.format(message.createdAt)), ("Updated", Timestamp.format(message.updatedAt)),
        ]
        let rows = fields.map { "<tr><th>\($0.0)</th><td>\(h($0.1 ?? "-"))</td></tr>" }.joined()
        let events = message.events.map {
            "<tr><td>\(h(Timestamp.format($0.at)))</td><td class=\"status \($0.status.rawValue)\">\($0.status.rawValue)</td><td>\(h($0.detail ?? ""))</td></tr>"
        }.joined()
        return """
            <table class=fields>\(rows)</table><h2>Transitions</h2>
            <table id="events"><tr><th>At</th><th>Status</th><th>Detail</th></tr>\(events)</table><p><a href="/admin/">Back</a></p>
            """
    }

    // MARK: HTML

    /// Escapes text for HTML content and attribute values.
    static func h(_ text: String) -> String { Template.escape(text, .html) }

    static func age(_ seconds: TimeInterval) -> String {
        let value = max(0, Int(seconds.rounded()))
        if value < 120 { return "\(value) s" }
        if value < 7200 { return "\(value / 60) min" }
        return "\(value / 3600) h \(value % 3600 / 60) min"
    }

    /// A POST form with hidden fields and, in a session, the CSRF token.
    static func postForm(_ action: String, _ fields: [String: String], button: String, caller: Caller, session: AdminSession) -> String {
        var hidden = fields.sorted { $0.key < $1.key }.map { "<input type=hidden name=\"\(h($0.key))\" value=\"\(h($0.value))\">" }
        if let cookie = caller.cookie { hidden.append("<input type=hidden name=\"csrf\" value=\"\(session.csrf(for: cookie))\">") }
        return "<form method=\"post\" action=\"\(h(action))\">\(hidden.joined())<button>\(h(button))</button></form>"
    }

    static func page(_ title: String, _ body: String, caller: Caller?, session: AdminSession) -> String {
        let logout = caller.map { postForm("/admin/logout", [:], button: "Log out", caller: $0, session: session) } ?? ""
        return """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><title>\(h(title))</title><style>
            body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0}
            td,th{border-bottom:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}td.n{text-align:right}
            .status.sent,.status.delivered{color:#176}.status.failed,.status.dead,.status.undelivered,.status.uncertain{color:#a11}
            form{display:inline}section{margin-bottom:2em}.hint{color:#666}.problem{color:#a11}header{display:flex;gap:1em;align-items:center}
            </style></head><body><header><h1>\(h(title))</h1>\(logout)</header>
            <nav><a href="/admin/#queues">Queues</a> · <a href="/admin/#workers">Workers</a> · <a href="/admin/#messages">Messages</a> · \
            <a href="/admin/#dead-letters">Dead letters</a> · <a href="/admin/#blocks">Prefix blocks</a> · <a href="/admin/#limits">Limits</a></nav>
            \(body)</body></html>
            """
    }

    static func loginPage(problem: String?) -> String {
        """
        <!doctype html><html lang="en"><head><meta charset="utf-8"><title>Herald: log in</title></head><body>
        <h1>Herald status</h1>\(problem.map { "<p class=problem>\(h($0))</p>" } ?? "")
        <form method="post" action="/admin/login"><label>Admin token <input type="password" name="token" autocomplete="current-password"></label>
        <button>Log in</button></form></body></html>
        """
    }

    static func html(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        // No script runs here at all; forms post only to this origin; no framing (clickjacking). CSP cannot
        // stop an injected meta refresh or form: escaping every value (`h`) is what prevents those.
        headers[.contentSecurityPolicy] =
            "default-src 'none'; script-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        headers[.xContentTypeOptions] = "nosniff"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func redirect(_ location: String) -> Response {
        var headers = HTTPFields()
        headers[.location] = location
        headers[.cacheControl] = "no-store"
        return Response(status: .seeOther, headers: headers)
    }

    /// An `application/x-www-form-urlencoded` body (up to 64 KiB).
    static func form(_ request: Request) async throws -> [String: String] {
        let buffer = try await request.body.collect(upTo: WireBody.maximumSize)
        var fields: [String: String] = [:]
        for pair in String(buffer: buffer).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
            }
            if let name = parts.first, name.isEmpty == false { fields[name] = parts.count > 1 ? parts[1] : "" }
        }
        return fields
    }
}
