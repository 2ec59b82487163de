/// Renders a ``GraphDescription`` as an indented tree and an initialization table.
struct TextDump {
    let graph: GraphDescription

    init(_ graph: GraphDescription) {
        self.graph = graph
    }

    func render() -> String {
        var lines: [String] = []
        let counts = Lifetime.allCases.map { lifetime in
            "\(graph.services.filter { $0.lifetime == lifetime }.count) \(lifetime)"
        }
        lines.append("ServiceGraph: \(graph.services.count) services (\(counts.joined(separator: ", ")))")
        var expanded = Array(repeating: false, count: graph.services.count)
        for root in graph.roots {
            tree(root, prefix: "", childPrefix: "", expanded: &expanded, path: [], into: &lines)
        }
        if !graph.initializationOrder.isEmpty {
            var header = "Initialization order"
            if let total = graph.totalDuration { header += " (build took \(total.milliseconds))" }
            lines.append(header + ":")
            for (index, slot) in graph.initializationOrder.enumerated() {
                let service = graph.services[slot]
                var line = "  \(index + 1). \(service.name)"
                if let factory = service.factoryDuration { line += "  factory \(factory.milliseconds)" }
                if let didAdd = service.didAddDuration { line += ", didAdd \(didAdd.milliseconds)" }
                lines.append(line)
            }
        }
        if !graph.problems.isEmpty {
            lines.append("Problems:")
            for (index, problem) in graph.problems.enumerated() {
                lines.append("  \(index + 1). \(problem)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private func label(_ slot: Int) -> String {
        let service = graph.services[slot]
        var text = "\(service.name): \(service.valueType) [\(service.lifetime)"
        if let index = service.initializationIndex { text += ", #\(index + 1)" }
        if service.isOverride { text += ", override" }
        text += "] @ \(service.site)"
        switch service.mark {
        case .rootCause: text += "  ✗ \(service.problemCodes.joined(separator: ", "))"
        case .affected: text += "  (not built: depends on a problem)"
        case nil: break
        }
        return text
    }

    /// Prints `slot` and, the first time it appears, its dependencies; later appearances say so.
    private func tree(
        _ slot: Int,
        prefix: String,
        childPrefix: String,
        expanded: inout [Bool],
        path: Set<Int>,
        into lines: inout [String]
    ) {
        if path.contains(slot) {
            lines.append(prefix + "\(graph.services[slot].name) (cycle)")
            return
        }
        if expanded[slot] {
            lines.append(prefix + "\(graph.services[slot].name) (see above)")
            return
        }
        expanded[slot] = true
        lines.append(prefix + label(slot))
        let dependencies = graph.services[slot].dependencies
        for (index, dependency) in dependencies.enumerated() {
            let isLast = index == dependencies.count - 1
            let branch = childPrefix + (isLast ? "└─ " : "├─ ")
            let next = childPrefix + (isLast ? "   " : "│  ")
            guard let child = dependency.slot else {
                lines.append(branch + "\(dependency.name) (missing provider)")
                continue
            }
            tree(child, prefix: branch, childPrefix: next, expanded: &expanded, path: path.union([slot]), into: &lines)
        }
    }
}
