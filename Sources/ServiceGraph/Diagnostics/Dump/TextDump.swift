/// Renders a ``GraphDescription`` as an indented tree and an initialization table.
///
/// Each service is expanded once, under the first service that depends on it; later appearances say
/// "(see above)", so the tree has one line per service and per dependency edge. Indentation stops
/// growing below ``maximumIndentedDepth`` levels (deeper lines say their depth instead), so every
/// line is bounded and the whole text is linear in services + edges, however deep the graph.
struct TextDump {
    /// The deepest level that is indented; deeper levels go on at this indentation.
    static let maximumIndentedDepth = 24

    let graph: GraphDescription

    init(_ graph: GraphDescription) {
        self.graph = graph
    }

    /// - Complexity: O(services + edges), iteratively: deep graphs cannot overflow the stack.
    func render() -> String {
        let text = DumpText(capacity: 160 * (graph.services.count + graph.edgeCount) + 4096)
        text.write("ServiceGraph: ")
        text.write(number: graph.services.count)
        text.write(" services (")
        for (index, lifetime) in Lifetime.allCases.enumerated() {
            if index > 0 { text.write(", ") }
            text.write(number: graph.services.lazy.filter { $0.lifetime == lifetime }.count)
            text.write(" ")
            text.write(string: lifetime.description)
        }
        let seeds = graph.services.lazy.filter(\.isSeed).count
        if seeds > 0 {
            text.write("; ")
            text.write(number: seeds)
            text.write(seeds == 1 ? " seed" : " seeds")
        }
        let lazySingletons = graph.services.lazy.filter(\.isCreatedOnFirstUse).count
        if lazySingletons > 0 {
            text.write("; ")
            text.write(number: lazySingletons)
            text.write(lazySingletons == 1 ? " singleton" : " singletons")
            text.write(" created on first use")
        }
        text.write(")\n")
        var expanded = Array(repeating: false, count: graph.services.count)
        var onPath = Array(repeating: false, count: graph.services.count)
        // The roots first; then what only a cycle reaches (a graph that is one big cycle has no root).
        for slot in graph.roots + Array(graph.services.indices) where !expanded[slot] {
            tree(from: slot, expanded: &expanded, onPath: &onPath, into: text)
        }
        if !graph.initializationOrder.isEmpty {
            text.write("Initialization order")
            if let total = graph.totalDuration {
                text.write(" (build took ")
                text.write(string: total.milliseconds)
                text.write(")")
            }
            text.write(":\n")
            for (index, slot) in graph.initializationOrder.enumerated() {
                text.write("  ")
                text.write(number: index + 1)
                text.write(". ")
                text.write(string: graph.services[slot].name)
                if let factory = graph.services[slot].factoryDuration {
                    text.write("  factory ")
                    text.write(string: factory.milliseconds)
                }
                if let didAdd = graph.services[slot].didAddDuration {
                    text.write(", didAdd ")
                    text.write(string: didAdd.milliseconds)
                }
                text.write("\n")
            }
        }
        if !graph.problems.isEmpty {
            text.write("Problems:\n")
            for (index, problem) in graph.problems.enumerated() {
                text.write("  ")
                text.write(number: index + 1)
                text.write(". ")
                text.write(string: problem.description)
                text.write("\n")
            }
        }
        return text.string
    }

    /// `slot`'s line after its branch: name, value type, lifetime, site and marks.
    private func label(_ slot: Int, into text: DumpText) {
        let service = graph.services[slot]
        text.write(string: service.name)
        text.write(": ")
        text.write(string: service.valueType)
        text.write(" [")
        text.write(string: service.lifetimeLabel)
        if let index = service.initializationIndex {
            text.write(", #")
            text.write(number: index + 1)
        }
        if service.isOverride { text.write(", override") }
        if let module = service.module {
            text.write(", module ")
            text.write(module, escaping: Self.lineBreaks)
        }
        text.write("] @ ")
        text.write(string: service.site.fileID)
        text.write(":")
        text.write(number: service.site.line)
        switch service.mark {
        case .rootCause:
            text.write("  ✗ ")
            text.write(string: service.problemCodes.joined(separator: ", "))
        case .affected: text.write("  (not built: depends on a problem)")
        case .rebuilt: text.write("  ↻ made again")
        case .shared: text.write("  = shared")
        case .added: text.write("  + added")
        case nil: break
        }
        text.write("\n")
    }

    /// A service being expanded: which of its dependencies comes next, and how its children's lines
    /// start.
    private struct Frame {
        let slot: Int
        let depth: Int
        let childPrefix: String
        var next = 0
    }

    /// Prints `root` and, depth first, each dependency: expanded the first time it appears, "(see
    /// above)" later, "(cycle)" when it is one of the services being expanded.
    private func tree(from root: Int, expanded: inout [Bool], onPath: inout [Bool], into text: DumpText) {
        label(root, into: text)
        expanded[root] = true
        onPath[root] = true
        var stack = [Frame(slot: root, depth: 0, childPrefix: "")]
        while let frame = stack.last {
            // The edges, then the optional dependencies nothing provides (no edge: shown, not expanded).
            let edgeCount = graph.dependencyCount(of: frame.slot)
            let absent = graph.absentOptionals[frame.slot] ?? []
            let count = edgeCount + absent.count
            guard frame.next < count else {
                onPath[frame.slot] = false
                stack.removeLast()
                continue
            }
            stack[stack.count - 1].next += 1
            let isLast = frame.next == count - 1
            let depth = frame.depth + 1
            if depth > Self.maximumIndentedDepth && frame.next == 0 && depth == Self.maximumIndentedDepth + 1 {
                text.write(string: frame.childPrefix)
                text.write("┆ deeper than ")
                text.write(number: Self.maximumIndentedDepth)
                text.write(" levels: the tree goes on at this indentation, each line with its depth\n")
            }
            text.write(string: frame.childPrefix)
            text.write(isLast ? "└─ " : "├─ ")
            if depth > Self.maximumIndentedDepth {
                text.write("(depth ")
                text.write(number: depth)
                text.write(") ")
            }
            guard frame.next < edgeCount else {
                text.write(string: absent[frame.next - edgeCount])
                text.write("? (optional, not provided)\n")
                continue
            }
            let kind = graph.kind(frame.next, of: frame.slot)
            if kind != .direct {
                text.write("(")
                text.write(string: kind.name)
                text.write(") ")
            }
            switch graph.dependency(frame.next, of: frame.slot) {
            case .missing(let position):
                text.write(string: graph.missingKeys[position])
                text.write(" (missing provider)\n")
            case .service(let child) where onPath[child]:
                text.write(string: graph.services[child].name)
                text.write(" (cycle)\n")
            case .service(let child) where expanded[child]:
                text.write(string: graph.services[child].name)
                text.write(" (see above)\n")
            case .service(let child):
                label(child, into: text)
                expanded[child] = true
                onPath[child] = true
                let childPrefix =
                    depth < Self.maximumIndentedDepth ? frame.childPrefix + (isLast ? "   " : "│  ") : frame.childPrefix
                stack.append(Frame(slot: child, depth: depth, childPrefix: childPrefix))
            }
        }
    }

    /// Line breaks spelled out, so that a name keeps its service on one line.
    private static let lineBreaks = Escapes { byte in
        switch byte {
        case UInt8(ascii: "\n"): "\\n"
        case UInt8(ascii: "\r"): "\\r"
        default: nil
        }
    }
}
