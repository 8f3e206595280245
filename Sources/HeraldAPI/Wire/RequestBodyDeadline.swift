import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// In every herald-api connection's pipeline, between the HTTP codec and the server: a request body must
/// arrive whole within `timeout` of its head, whichever route (or none) reads it.
///
/// The listener's idle timeout alone does not bound a body: each byte trickled in counts as activity.
/// So the head arms a deadline and the body's end disarms it; at the deadline the connection is closed.
/// The timer is armed only when a read leaves a request unfinished, so a request that arrives in one read
/// (nearly all of them) schedules nothing; when armed it is scheduled and cancelled on the connection's
/// own event loop, which wakes no other thread.
///
/// A response that starts before its request's body has ended means the route answered without the
/// body (a 404, a 401, a GET with a body): it carries `Connection: close`, and once it is written the
/// output side is shut. The rest of the body is then read and dropped until it ends or the deadline
/// passes, rather than drained without bound; shutting only the output side first lets the client read
/// the answer instead of a reset from unread bytes.
final class RequestBodyDeadline: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let timeout: TimeAmount
    /// When the body being read must have ended; nil between requests.
    private var deadline: NIODeadline?
    private var timer: Scheduled<Void>?
    /// The current response started before its request's body ended.
    private var answeredEarly = false
    /// That response is written and the output side shut: the body's end closes the connection.
    private var outputClosed = false

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            // The loop's clock, so a test's embedded loop can move it.
            deadline = context.eventLoop.now + timeout
        case .body:
            break
        case .end:
            deadline = nil
            disarm()
            if outputClosed {
                context.close(promise: nil)
                return
            }
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if let deadline, timer == nil {
            let channel = context.channel
            timer = context.eventLoop.scheduleTask(deadline: deadline) { channel.close(promise: nil) }
        }
        context.fireChannelReadComplete()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var response) where deadline != nil:
            answeredEarly = true
            response.headerFields[.connection] = "close"
            context.write(wrapOutboundOut(.head(response)), promise: promise)
        case .end where answeredEarly:
            answeredEarly = false
            let written = promise ?? context.eventLoop.makePromise()
            context.writeAndFlush(data, promise: written)
            written.futureResult.hop(to: context.eventLoop).assumeIsolated().whenComplete { [self] _ in
                // The body may have ended while the answer was being written.
                if deadline == nil {
                    context.close(promise: nil)
                } else {
                    outputClosed = true
                    context.close(mode: .output, promise: nil)
                }
            }
        default:
            context.write(data, promise: promise)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
    }

    private func disarm() {
        timer?.cancel()
        timer = nil
    }
}
