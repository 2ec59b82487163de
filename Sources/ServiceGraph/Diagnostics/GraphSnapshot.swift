/// What a ``ServiceGraphError`` can describe of its graph, made only if someone asks for a dump.
final class GraphSnapshot: Sendable {
    let description: @Sendable () -> GraphDescription

    init(_ description: @escaping @Sendable () -> GraphDescription) {
        self.description = description
    }
}
