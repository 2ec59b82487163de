/// A problem's message that is written the first time someone reads it.
///
/// For messages that are costly to write and usually not read: a key that is not in the graph is
/// often asked for by code that expects the miss (`try? graph.resolve(OptionalFeatureKey.self)`), and
/// its "closest keys" compare the key with every key of the graph.
final class DeferredMessage: Sendable {
    private let write: @Sendable () -> String
    private let written = Locked<String?>(nil)

    init(_ write: @escaping @Sendable () -> String) {
        self.write = write
    }

    var text: String {
        if let text = written.withLock({ $0 }) { return text }
        // Written outside the lock: writing reads the keys' `serviceName`, which is user code.
        let text = write()
        return written.withLock { written in
            if let earlier = written { return earlier }
            written = text
            return text
        }
    }
}
