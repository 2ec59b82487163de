/// The output format of a graph dump.
///
/// Every format lists services in a stable order (registration order, dependencies in declaration
/// order), so dumps can be snapshot-tested.
public struct DumpFormat: Hashable, Sendable, CustomStringConvertible {
    private enum Base: String, Hashable, Sendable {
        case text
        case dot
        case mermaid
        case json
    }

    private let base: Base

    private init(_ base: Base) {
        self.base = base
    }

    public var description: String { base.rawValue }

    /// An indented tree from each root (a service nothing depends on) down to its dependencies,
    /// followed, for a built graph, by the initialization order with timings. Deeper than 24
    /// levels, lines are not indented further and say their depth instead.
    public static let text = DumpFormat(.text)

    /// A Graphviz digraph (`dot -Tsvg`): an edge from each service to each of its dependencies; root
    /// causes of problems in red, services that could not be built because of them in orange. Nodes
    /// are keyed by position (`s0`, and `m0` for a missing key) and labelled with the key's name.
    public static let dot = DumpFormat(.dot)

    /// A Mermaid flowchart, for Markdown that renders Mermaid (GitHub, DocC).
    public static let mermaid = DumpFormat(.mermaid)

    /// JSON for tools. The shape is documented in the Diagnostics article: a `services` array
    /// (id, key, valueType, lifetime, site, override, seed, arguments, dependencies, dependencyIds,
    /// dependencyKinds, absentOptionalDependencies, missingDependencies, initializationIndex,
    /// factoryMilliseconds, didAddMilliseconds, mark, problems), the `initializationOrder`, and the
    /// `problems`.
    public static let json = DumpFormat(.json)
}
