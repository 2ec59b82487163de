public import ServiceGraph
public import Testing

/// Records a test issue listing every problem of `builder`'s graph, if it has any: one line in a test
/// suite makes a broken production graph fail the tests instead of the app at launch.
///
/// ```swift
/// @Test func productionGraphIsValid() {
///     expectValidGraph(AppGraph.builder())
/// }
/// ```
public func expectValidGraph(
    _ builder: ServiceGraph.Builder,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    do {
        try builder.validate()
    } catch {
        Issue.record(
            Comment(rawValue: "\(error)\n\(builder.dump(.text))"),
            sourceLocation: sourceLocation
        )
    }
}
