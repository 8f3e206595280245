import NIOCore

/// On a listening channel: at most `limit` accepted connections open at once. At the cap it asks the
/// socket for no more accepts, so further clients wait in the kernel's backlog rather than being
/// refused, and accepting resumes when one of the open connections closes.
final class ConnectionCap: ChannelDuplexHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel
    typealias OutboundIn = Never
    typealias OutboundOut = Never

    let limit: Int
    private var open = 0
    /// A read was withheld at the cap: issue it when a connection closes.
    private var readPending = false

    init(limit: Int) {
        self.limit = limit
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        open += 1
        let child = unwrapInboundIn(data)
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        child.closeFuture.hop(to: loop).whenComplete { _ in
            let (cap, context) = bound.value
            cap.open -= 1
            if cap.readPending, cap.open < cap.limit {
                cap.readPending = false
                context.read()
            }
        }
        context.fireChannelRead(data)
    }

    func read(context: ChannelHandlerContext) {
        guard open < limit else {
            readPending = true
            return
        }
        context.read()
    }
}
