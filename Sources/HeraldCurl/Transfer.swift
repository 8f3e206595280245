import CCurl
import Foundation

/// One request, and while it runs its easy handle and everything that must outlive the handle's use:
/// header list, buffers, continuation. Given a handle, configured and completed on the loop thread.
final class Transfer: @unchecked Sendable {
    /// The only protocols a transfer may use.
    static let allowedProtocols = "http,https,smtp,smtps"

    // @unchecked: after `perform` hands it to the inbox, only the loop thread touches it.

    /// What the transfer does.
    enum Kind {
        case http(CurlHTTPRequest)
        case mail(CurlMailRequest)
    }

    /// What it produced.
    enum Output {
        case http(CurlHTTPResponse)
        case mail(CurlMailReply)
    }

    let kind: Kind
    /// The easy handle while the transfer holds one (from `attach` to `detach`, on the loop thread).
    private(set) var handle: UnsafeMutableRawPointer?
    private var easy: UnsafeMutableRawPointer {
        guard let handle else { preconditionFailure("a transfer used its easy handle before attach or after detach") }
        return handle
    }
    var continuation: CheckedContinuation<Output, any Error>?
    var headerList: UnsafeMutablePointer<curl_slist>?
    var recipientList: UnsafeMutablePointer<curl_slist>?
    var body = Data()
    var responseHeaders: [(name: String, value: String)] = []
    /// SMTP reply lines, in order.
    var replyLines: [String] = []
    /// The message being uploaded (SMTP) and how much of it libcurl has taken.
    var upload = Data()
    var uploadOffset = 0
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))

    init(_ kind: Kind) {
        self.kind = kind
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        if let handle { curl_easy_cleanup(handle) }
        curl_slist_free_all(headerList)
        curl_slist_free_all(recipientList)
        errorBuffer.deallocate()
    }

    /// Takes `easy` (fresh or reset) for this transfer.
    func attach(_ easy: UnsafeMutableRawPointer) {
        handle = easy
    }

    /// Gives the handle back once the transfer is out of the multi handle and its outcome read, with the
    /// lists it pointed at freed (a reset handle no longer refers to them).
    func detach() -> UnsafeMutableRawPointer? {
        defer {
            handle = nil
            curl_slist_free_all(headerList)
            curl_slist_free_all(recipientList)
            headerList = nil
            recipientList = nil
        }
        return handle
    }

    /// Applies the request to the easy handle; returns an error for options libcurl refused.
    func configure() -> CurlError? {
        switch kind {
        case .http(let request): configure(request)
        case .mail(let request): configure(request)
        }
    }

    /// Options every transfer shares.
    private func common(url: String, timeout: Duration, connectTimeout: Duration, caFile: String?) -> [CURLcode] {
        let opaque = Unmanaged.passUnretained(self).toOpaque()
        var codes: [CURLcode] = []
        codes.append(herald_curl_setopt_string(easy, CURLOPT_URL, url))
        codes.append(herald_curl_setopt_long(easy, CURLOPT_NOSIGNAL, 1))
        // Herald speaks HTTP(S) to gateways, APNs and siteverify and SMTP(S) to relays; a configured
        // file://, gopher:// or dict:// URL must fail rather than read files or reach other services.
        codes.append(herald_curl_setopt_string(easy, CURLOPT_PROTOCOLS_STR, Self.allowedProtocols))
        codes.append(herald_curl_setopt_string(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https"))
        codes.append(herald_curl_setopt_pointer(easy, CURLOPT_PRIVATE, opaque))
        codes.append(herald_curl_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer))
        codes.append(herald_curl_setopt_long(easy, CURLOPT_TIMEOUT_MS, Int(timeout.curlMilliseconds)))
        codes.append(herald_curl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(connectTimeout.curlMilliseconds)))
        codes.append(herald_curl_setopt_callback(easy, CURLOPT_HEADERFUNCTION, transferWriteHeader))
        codes.append(herald_curl_setopt_pointer(easy, CURLOPT_HEADERDATA, opaque))
        if let caFile { codes.append(herald_curl_setopt_string(easy, CURLOPT_CAINFO, caFile)) }
        return codes
    }

    private func failure(_ codes: [CURLcode]) -> CurlError? {
        guard let bad = codes.first(where: { $0 != CURLE_OK }) else { return nil }
        return CurlError(kind: .configuration, code: Int(bad.rawValue), message: String(cString: curl_easy_strerror(bad)))
    }

    /// SMTP: envelope, optional STARTTLS requirement and login, the message uploaded from memory.
    private func configure(_ request: CurlMailRequest) -> CurlError? {
        let opaque = Unmanaged.passUnretained(self).toOpaque()
        var codes = common(url: request.url, timeout: request.timeout, connectTimeout: request.connectTimeout, caFile: request.caFile)
        codes.append(herald_curl_setopt_string(easy, CURLOPT_MAIL_FROM, "<\(request.mailFrom)>"))
        var list: UnsafeMutablePointer<curl_slist>?
        for recipient in request.recipients { list = curl_slist_append(list, "<\(recipient)>") }
        recipientList = list
        codes.append(herald_curl_setopt_slist(easy, CURLOPT_MAIL_RCPT, list))
        if request.requireTLS { codes.append(herald_curl_setopt_long(easy, CURLOPT_USE_SSL, Int(CURLUSESSL_ALL.rawValue))) }
        if let username = request.username, let password = request.password {
            codes.append(herald_curl_setopt_string(easy, CURLOPT_USERNAME, username))
            codes.append(herald_curl_setopt_string(easy, CURLOPT_PASSWORD, password))
        }
        upload = request.message
        uploadOffset = 0
        codes.append(herald_curl_setopt_long(easy, CURLOPT_UPLOAD, 1))
        codes.append(herald_curl_setopt_off_t(easy, CURLOPT_INFILESIZE_LARGE, curl_off_t(request.message.count)))
        codes.append(herald_curl_setopt_callback(easy, CURLOPT_READFUNCTION, transferReadUpload))
        codes.append(herald_curl_setopt_pointer(easy, CURLOPT_READDATA, opaque))
        return failure(codes)
    }

    /// HTTP/1.1 or HTTP/2.
    private func configure(_ request: CurlHTTPRequest) -> CurlError? {
        let opaque = Unmanaged.passUnretained(self).toOpaque()
        var codes = common(url: request.url, timeout: request.timeout, connectTimeout: request.connectTimeout, caFile: request.caFile)
        codes.append(herald_curl_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1))
        codes.append(herald_curl_setopt_long(easy, CURLOPT_MAXAGE_CONN, 600))
        codes.append(herald_curl_setopt_callback(easy, CURLOPT_WRITEFUNCTION, transferWriteBody))
        codes.append(herald_curl_setopt_pointer(easy, CURLOPT_WRITEDATA, opaque))
        switch request.version {
        case .http1_1:
            codes.append(herald_curl_setopt_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1)))
        case .http2:
            codes.append(herald_curl_setopt_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS)))
            codes.append(herald_curl_setopt_long(easy, CURLOPT_PIPEWAIT, 1))
        case .http2PriorKnowledge:
            codes.append(herald_curl_setopt_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)))
            codes.append(herald_curl_setopt_long(easy, CURLOPT_PIPEWAIT, 1))
        }
        if let payload = request.body {
            codes.append(herald_curl_setopt_long(easy, CURLOPT_POSTFIELDSIZE, payload.count))
            // COPYPOSTFIELDS copies: the Swift buffer need not outlive this call.
            codes.append(
                payload.withUnsafeBytes { raw in
                    herald_curl_setopt_pointer(
                        easy, CURLOPT_COPYPOSTFIELDS,
                        UnsafeMutableRawPointer(mutating: raw.baseAddress ?? UnsafeRawPointer(("" as StaticString).utf8Start)))
                })
        }
        if request.method != "POST" || request.body == nil {
            if request.method == "GET" {
                codes.append(herald_curl_setopt_long(easy, CURLOPT_HTTPGET, 1))
            } else {
                codes.append(herald_curl_setopt_string(easy, CURLOPT_CUSTOMREQUEST, request.method))
            }
        }
        var list: UnsafeMutablePointer<curl_slist>?
        for header in request.headers {
            list = curl_slist_append(list, "\(header.name): \(header.value)")
        }
        // libcurl adds "Expect: 100-continue" to larger bodies, costing a round trip; gateways don't need it.
        list = curl_slist_append(list, "Expect:")
        headerList = list
        codes.append(herald_curl_setopt_slist(easy, CURLOPT_HTTPHEADER, list))
        return failure(codes)
    }

    func outcome(_ result: CURLcode) -> Result<Output, CurlError> {
        switch kind {
        case .http: httpOutcome(result).map(Output.http)
        case .mail: .success(.mail(mailReply(result)))
        }
    }

    /// An SMTP exchange always has an answer: the last reply code (0 when the connection failed before
    /// one), every reply line, and whether the message had started to leave.
    func mailReply(_ result: CURLcode) -> CurlMailReply {
        var replyCode = 0
        herald_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &replyCode)
        let detail = String(cString: errorBuffer)
        return CurlMailReply(
            curlCode: Int(result.rawValue), replyCode: replyCode, replyLines: replyLines,
            error: result == CURLE_OK ? nil : (detail.isEmpty ? String(cString: curl_easy_strerror(result)) : detail),
            messageStarted: uploadOffset > 0)
    }

    func httpOutcome(_ result: CURLcode) -> Result<CurlHTTPResponse, CurlError> {
        guard result == CURLE_OK else {
            var requestSize = 0
            herald_curl_getinfo_long(easy, CURLINFO_REQUEST_SIZE, &requestSize)
            let detail = String(cString: errorBuffer)
            let message = detail.isEmpty ? String(cString: curl_easy_strerror(result)) : detail
            return .failure(CurlError(kind: Self.classify(result, requestSent: requestSize > 0), code: Int(result.rawValue), message: message))
        }
        var status = 0
        herald_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        var version = 0
        herald_curl_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
        var retryAfter: curl_off_t = 0
        herald_curl_getinfo_off_t(easy, CURLINFO_RETRY_AFTER, &retryAfter)
        var connects = 0
        herald_curl_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
        let httpVersion: Int
        switch version {
        case Int(CURL_HTTP_VERSION_2_0): httpVersion = 20
        case Int(CURL_HTTP_VERSION_1_0): httpVersion = 10
        default: httpVersion = 11
        }
        return .success(
            CurlHTTPResponse(
                status: status, headers: responseHeaders, body: body, httpVersion: httpVersion,
                retryAfter: retryAfter > 0 ? .seconds(Int64(retryAfter)) : nil, connectionReused: connects == 0))
    }

    /// The error for a transfer cancelled by its caller: in doubt once the request began to leave.
    func cancellation() -> CurlError {
        var requestSize = 0
        herald_curl_getinfo_long(easy, CURLINFO_REQUEST_SIZE, &requestSize)
        return CurlError(kind: requestSize > 0 ? .failedAfterSending : .cancelledBeforeSending, code: -2, message: "cancelled")
    }

    static func classify(_ code: CURLcode, requestSent: Bool) -> CurlError.Kind {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR:
            return .couldNotConnect
        case CURLE_OPERATION_TIMEDOUT:
            return requestSent ? .failedAfterSending : .timedOutBeforeSending
        case CURLE_GOT_NOTHING, CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_PARTIAL_FILE:
            return requestSent ? .failedAfterSending : .couldNotConnect
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM, CURLE_URL_MALFORMAT,
            CURLE_UNSUPPORTED_PROTOCOL:
            return .configuration
        default:
            return .other
        }
    }

    func finish(_ result: Result<Output, CurlError>) {
        guard let continuation else { return }
        self.continuation = nil
        switch result {
        case .success(let response): continuation.resume(returning: response)
        case .failure(let error): continuation.resume(throwing: error)
        }
    }

    /// One header line as curl hands it over (`Name: value\r\n`; for SMTP, a server reply line).
    func appendHeaderLine(_ raw: UnsafeRawBufferPointer) {
        let line = HeaderLine.trimmed(raw[...])
        if case .mail = kind {
            replyLines.append(String(decoding: line, as: UTF8.self))
            return
        }
        if line.starts(with: "HTTP/".utf8) {
            // A new status line (after 100 Continue or a redirect): keep only the final response's headers.
            responseHeaders = []
            return
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
        let value = String(decoding: HeaderLine.trimmed(line[(colon + 1)...]), as: UTF8.self)
        responseHeaders.append((name, value))
    }
}

/// Header lines trimmed on their bytes: Foundation's `trimmingCharacters(in:)` bridges to NSString on
/// Linux, and three calls per header line were 4 % of an SMS worker's CPU.
enum HeaderLine {
    /// `bytes` without leading and trailing spaces, tabs, CR and LF (HTTP's optional white space and the
    /// line's end).
    static func trimmed<Bytes: BidirectionalCollection<UInt8>>(_ bytes: Bytes) -> Bytes.SubSequence {
        let blank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
        guard let first = bytes.firstIndex(where: { blank($0) == false }) else { return bytes[bytes.endIndex...] }
        var end = bytes.endIndex
        while blank(bytes[bytes.index(before: end)]) { end = bytes.index(before: end) }
        return bytes[first..<end]
    }
}

private func transferWriteBody(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    transfer.body.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: size * count)
    return size * count
}

private func transferReadUpload(_ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let buffer, let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let length = min(size * count, transfer.upload.count - transfer.uploadOffset)
    guard length > 0 else { return 0 }
    transfer.upload.withUnsafeBytes { raw in
        UnsafeMutableRawPointer(buffer).copyMemory(from: raw.baseAddress! + transfer.uploadOffset, byteCount: length)
    }
    transfer.uploadOffset += length
    return length
}

private func transferWriteHeader(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    transfer.appendHeaderLine(UnsafeRawBufferPointer(start: data, count: size * count))
    return size * count
}

extension Duration {
    /// Whole milliseconds, as libcurl's `_MS` options take them.
    var curlMilliseconds: Int {
        let parts = components
        return Int(parts.seconds) * 1000 + Int(parts.attoseconds / 1_000_000_000_000_000)
    }
}
