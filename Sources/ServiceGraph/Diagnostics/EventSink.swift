/// Where a graph sends its events; a no-op without a handler.
struct EventSink: Sendable {
    let handler: (@Sendable (ServiceGraphEvent) -> Void)?

    /// Whether there is a handler: a test that copies nothing, for a loop that would otherwise copy
    /// (and retain) the handler once per event it does not send.
    var isEnabled: Bool { handler != nil }

    func send(_ event: @autoclosure () -> ServiceGraphEvent) {
        handler?(event())
    }
}
