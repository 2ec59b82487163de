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

/// Records a test issue for each problem of `module` built alone, beyond the keys it needs from outside:
/// a module's own test says what the rest of the application must provide, and fails when the module
/// needs something else, stops needing one of them, or has any other problem.
///
/// ```swift
/// @Test func paymentsModuleIsValid() {
///     expectValidModule(PaymentsModule(), needing: ConfigKey.self, LoggerKey.self)
/// }
/// ```
public func expectValidModule<each External: ServiceKey>(
    _ module: some GraphModule,
    needing externals: repeat (each External).Type,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    var builder = ServiceGraph.Builder()
    builder.include(module)
    var declared: [String] = []
    for external in repeat each externals { declared.append(external.serviceName) }
    var problems: [ServiceGraphError.Problem] = []
    do {
        try builder.validate()
    } catch {
        problems = error.problems
    }
    let needed = Set(problems.filter { $0.code == .missingProvider }.map(\.key))
    for problem in problems where problem.code != .missingProvider || !declared.contains(problem.key) {
        Issue.record(
            Comment(rawValue: "\(module.name): \(problem)"),
            sourceLocation: sourceLocation
        )
    }
    for name in declared where !needed.contains(name) {
        Issue.record(
            Comment(rawValue: "\(module.name) does not need \(name) from outside (any more)"),
            sourceLocation: sourceLocation
        )
    }
}
