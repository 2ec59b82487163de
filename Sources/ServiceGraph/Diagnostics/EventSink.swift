#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a graph sends its events; a no-op without a handler.
struct EventSink: Sendable {
    let handler: (@Sendable (ServiceGraphEvent) -> Void)?
    /// The kinds the handler wants, one bit each (``ServiceGraphEvent/Kind/bit``).
    private let wanted: UInt32

    init(handler: (@Sendable (ServiceGraphEvent) -> Void)?, kinds: Set<ServiceGraphEvent.Kind>) {
        self.handler = handler
        self.wanted = kinds.reduce(0) { $0 | $1.bit }
    }

    /// The kinds the handler wants, as the builder gave them (for a child graph's builder).
    var kinds: Set<ServiceGraphEvent.Kind> { Set(ServiceGraphEvent.Kind.allCases.filter { wanted & $0.bit != 0 }) }

    /// Whether there is a handler that wants some kind: a test that copies nothing, for a loop that would
    /// otherwise copy (and retain) the handler once per event it does not send.
    var isEnabled: Bool { handler != nil && wanted != 0 }

    /// Whether there is a handler that wants events of `kind`: the test before making an event whose key
    /// or duration costs something to compute.
    func isEnabled(_ kind: ServiceGraphEvent.Kind) -> Bool {
        handler != nil && wanted & kind.bit != 0
    }

    func send(_ event: @autoclosure () -> ServiceGraphEvent) {
        guard let handler else { return }
        let event = event()
        guard wanted & event.kind.bit != 0 else { return }
        // An event the handler's own call into a graph made, on its thread: not delivered, so that a
        // handler that resolves on `resolved` (or opens a scope on `scopeOpened`) does not call itself
        // until the stack runs out.
        guard !EventDelivery.isDelivering else { return }
        EventDelivery.isDelivering = true
        defer { EventDelivery.isDelivering = false }
        handler(event)
    }
}

/// Whether the current thread is running an event handler: a thread-local flag.
enum EventDelivery {
    #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "ServiceGraph: no thread-local storage left for the event handler's flag")
        return key
    }()

    static var isDelivering: Bool {
        get { pthread_getspecific(key) != nil }
        set { pthread_setspecific(key, newValue ? UnsafeRawPointer(bitPattern: 1) : nil) }
    }
    #else
    // Without POSIX threads: no guard (a handler that calls back into the graph on every event recurses).
    static var isDelivering: Bool {
        get { false }
        set {}
    }
    #endif
}
