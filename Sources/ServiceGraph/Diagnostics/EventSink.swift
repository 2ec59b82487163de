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

    /// This sink's identity on a thread delivering its events (``EventDelivery``); nil without a handler.
    private let delivery: EventDelivery.Token?

    init(handler: (@Sendable (ServiceGraphEvent) -> Void)?, kinds: Set<ServiceGraphEvent.Kind>) {
        self.handler = handler
        self.wanted = kinds.reduce(0) { $0 | $1.bit }
        self.delivery = handler == nil ? nil : EventDelivery.Token()
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
        guard wanted & event.kind.bit != 0, let delivery else { return }
        // An event the handler's own call into this graph made, on its thread: not delivered, so that a
        // handler that resolves on `resolved` (or opens a scope on `scopeOpened`) does not call itself
        // until the stack runs out. Another graph's events (another sink) are delivered.
        let outer = EventDelivery.current
        guard outer != delivery.address else { return }
        EventDelivery.current = delivery.address
        defer { EventDelivery.current = outer }
        handler(event)
    }
}

/// The sink whose handler the current thread is running, if any: a thread-local address.
enum EventDelivery {
    /// A sink's identity: its address is what the thread-local holds.
    final class Token: Sendable {
        var address: UnsafeRawPointer { UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()) }
    }

    #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "ServiceGraph: no thread-local storage left for the event handler's flag")
        return key
    }()

    static var current: UnsafeRawPointer? {
        get { pthread_getspecific(key).map { UnsafeRawPointer($0) } }
        set { pthread_setspecific(key, newValue) }
    }
    #else
    // Without POSIX threads: no guard (a handler that calls back into the graph on every event recurses).
    static var current: UnsafeRawPointer? {
        get { nil }
        set {}
    }
    #endif
}
