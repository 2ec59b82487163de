/// The output format of a graph dump.
///
/// Every format lists services in a stable order (registration order, dependencies in declaration
/// order), so dumps can be snapshot-tested.
public struct DumpFormat: Hashable, Sendable, CustomStringConvertible {
    private enum Base: String, Hashable, Sendable {
        case text
    }

    private let base: Base

    private init(_ base: Base) {
        self.base = base
    }

    public var description: String { base.rawValue }

    /// An indented tree from each root (a service nothing depends on) down to its dependencies,
    /// followed, for a built graph, by the initialization order with timings.
    public static let text = DumpFormat(.text)
}
