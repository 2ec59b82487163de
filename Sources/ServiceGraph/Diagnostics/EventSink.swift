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
        if wanted & event.kind.bit != 0 { handler(event) }
    }
}
