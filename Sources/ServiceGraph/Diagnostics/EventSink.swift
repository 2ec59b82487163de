/// Where a graph sends its events; a no-op without a handler.
struct EventSink: Sendable {
    let handler: (@Sendable (ServiceGraphEvent) -> Void)?

    func send(_ event: @autoclosure () -> ServiceGraphEvent) {
        handler?(event())
    }
}
