/// Renders a ``GraphDescription`` as JSON, by hand: the library does not depend on Foundation.
///
/// The shape (version 1) is documented in the Diagnostics article and checked by a test that decodes
/// it with `JSONDecoder`.
struct JSONDump {
    let graph: GraphDescription

    init(_ graph: GraphDescription) {
        self.graph = graph
    }

    /// - Complexity: O(services + edges).
    func render() -> String {
        let text = DumpText(capacity: 520 * graph.services.count + 40 * graph.edgeCount + 4096)
        text.write("{\n  \"format\": \"servicegraph\",\n  \"version\": 1,\n  \"built\": ")
        text.write(graph.isBuilt ? "true" : "false")
        text.write(",\n")
        if let total = graph.totalDuration {
            text.write("  \"totalMilliseconds\": ")
            milliseconds(total, into: text)
            text.write(",\n")
        }
        text.write("  \"services\": ")
        array(graph.services.indices, into: text) { slot, text in service(slot, into: text) }
        text.write(",\n  \"missingKeys\": ")
        array(graph.missingKeys, into: text) { name, text in string(name, into: text) }
        text.write(",\n  \"initializationOrder\": ")
        array(graph.initializationOrder, into: text) { slot, text in string(graph.services[slot].name, into: text) }
        text.write(",\n  \"problems\": ")
        array(graph.problems, into: text) { problem, text in self.problem(problem, into: text) }
        text.write("\n}\n")
        return text.string
    }

    /// A service, at the indentation of an element of a top-level array. Its `id` is its slot, which
    /// `dependencyIds` refer to.
    private func service(_ slot: Int, into text: DumpText) {
        let service = graph.services[slot]
        text.write("{\n      \"id\": ")
        text.write(number: slot)
        text.write(",\n      \"key\": ")
        string(service.name, into: text)
        text.write(",\n      \"valueType\": ")
        string(service.valueType, into: text)
        text.write(",\n      \"lifetime\": \"")
        text.write(string: service.lifetime.description)
        text.write("\",\n      \"site\": ")
        site(service.site, into: text)
        text.write(",\n      \"override\": ")
        text.write(service.isOverride ? "true" : "false")
        text.write(",\n      \"seed\": ")
        text.write(service.isSeed ? "true" : "false")
        text.write(",\n      \"scopeKind\": ")
        if let kind = service.scopeKind { string(kind, into: text) } else { text.write("null") }
        text.write(",\n      \"module\": ")
        if let module = service.module { string(module, into: text) } else { text.write("null") }
        text.write(",\n      \"createdOnFirstUse\": ")
        text.write(service.isCreatedOnFirstUse ? "true" : "false")
        text.write(",\n      \"arguments\": ")
        if let arguments = service.arguments {
            inline(arguments, into: text) { name, text in string(name, into: text) }
        } else {
            text.write("null")
        }
        let dependencies = graph.dependencies(of: slot)
        text.write(",\n      \"dependencies\": ")
        inline(dependencies, where: \.isService, into: text) { dependency, text in
            string(graph.name(of: dependency), into: text)
        }
        text.write(",\n      \"dependencyIds\": ")
        inline(dependencies, where: \.isService, into: text) { dependency, text in
            if case .service(let target) = dependency { text.write(number: target) }
        }
        text.write(",\n      \"dependencyKinds\": ")
        let kinds = dependencies.indices.lazy.filter { dependencies[$0].isService }.map {
            graph.kind(dependencies.distance(from: dependencies.startIndex, to: $0), of: slot)
        }
        inline(kinds, into: text) { kind, text in string(kind.name, into: text) }
        text.write(",\n      \"absentOptionalDependencies\": ")
        inline(graph.absentOptionals[slot] ?? [], into: text) { name, text in string(name, into: text) }
        text.write(",\n      \"missingDependencies\": ")
        inline(dependencies, where: \.isMissing, into: text) { dependency, text in
            string(graph.name(of: dependency), into: text)
        }
        text.write(",\n      \"initializationIndex\": ")
        if let index = service.initializationIndex { text.write(number: index) } else { text.write("null") }
        text.write(",\n      \"factoryMilliseconds\": ")
        if let factory = service.factoryDuration { milliseconds(factory, into: text) } else { text.write("null") }
        text.write(",\n      \"didAddMilliseconds\": ")
        if let didAdd = service.didAddDuration { milliseconds(didAdd, into: text) } else { text.write("null") }
        text.write(",\n      \"mark\": ")
        if let mark = service.mark { string(mark.rawValue, into: text) } else { text.write("null") }
        text.write(",\n      \"problems\": ")
        inline(service.problemCodes, into: text) { code, text in string(code, into: text) }
        text.write("\n    }")
    }

    private func problem(_ problem: ServiceGraphError.Problem, into text: DumpText) {
        text.write("{\n      \"code\": ")
        string(problem.code.description, into: text)
        text.write(",\n      \"key\": ")
        string(problem.key, into: text)
        text.write(",\n      \"path\": ")
        inline(problem.path, into: text) { name, text in string(name, into: text) }
        text.write(",\n      \"site\": ")
        if let site = problem.site { self.site(site, into: text) } else { text.write("null") }
        text.write(",\n      \"message\": ")
        string(problem.message, into: text)
        text.write("\n    }")
    }

    private func site(_ site: RegistrationSite, into text: DumpText) {
        text.write("{\"fileID\": ")
        string(site.fileID, into: text)
        text.write(", \"line\": ")
        text.write(number: site.line)
        text.write("}")
    }

    /// Milliseconds with three decimals.
    private func milliseconds(_ duration: Duration, into text: DumpText) {
        text.write(string: duration.millisecondDigits(decimals: 3))
    }

    /// A top-level member's array: one element a line, or `[]`.
    private func array<Elements: Collection>(
        _ elements: Elements,
        into text: DumpText,
        element: (Elements.Element, DumpText) -> Void
    ) {
        guard !elements.isEmpty else {
            text.write("[]")
            return
        }
        text.write("[\n")
        var isFirst = true
        for value in elements {
            text.write(isFirst ? "    " : ",\n    ")
            isFirst = false
            element(value, text)
        }
        text.write("\n  ]")
    }

    /// An array on one line of the elements `including` selects.
    private func inline<Elements: Sequence>(
        _ elements: Elements,
        where including: (Elements.Element) -> Bool = { _ in true },
        into text: DumpText,
        element: (Elements.Element, DumpText) -> Void
    ) {
        text.write("[")
        var isFirst = true
        for value in elements where including(value) {
            if !isFirst { text.write(", ") }
            isFirst = false
            element(value, text)
        }
        text.write("]")
    }

    /// A JSON string literal with the escapes RFC 8259 requires.
    private func string(_ value: String, into text: DumpText) {
        text.write("\"")
        text.write(value, escaping: Self.escapes)
        text.write("\"")
    }

    private static let escapes = Escapes { byte in
        switch byte {
        case UInt8(ascii: "\""): "\\\""
        case UInt8(ascii: "\\"): "\\\\"
        case UInt8(ascii: "\n"): "\\n"
        case UInt8(ascii: "\r"): "\\r"
        case UInt8(ascii: "\t"): "\\t"
        case ..<0x20: "\\u00" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16)
        default: nil
        }
    }
}
