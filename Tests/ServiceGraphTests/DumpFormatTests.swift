import Foundation
import ServiceGraph
import Testing

@Suite("Dump formats")
struct DumpFormatTests {
    @Test func dotIsStableAndNamesEveryServiceAndEdge() async throws {
        let graph = try await DiagnosticsFixtures.builder().build()
        let dot = graph.dump(.dot, includingTimings: false)
        #expect(dot == graph.dump(.dot, includingTimings: false))
        #expect(dot.hasPrefix("digraph ServiceGraph {"))
        // Nodes are keyed by slot (registration order), and labelled with the key's name.
        #expect(dot.contains("  s2 -> s0;\n"), "DiagStore → DiagConfig")
        #expect(dot.contains("  s3 -> s1;\n"), "DiagHandler → DiagLogger")
        #expect(dot.contains(#"  s0 [label="DiagConfig\n"#))
        #expect(
            dot.contains(#"label="DiagConfig\nString\nsingleton · #1\nServiceGraphTests/DiagnosticsFixtures.swift:14""#)
        )
        #expect(!dot.contains(" ms"), "no timings when asked for none")
        #expect(graph.dump(.dot).contains(" ms"), "timings by default")
    }

    @Test(.enabled(if: Graphviz.isAvailable || ProcessInfo.processInfo.environment["CI"] != nil))
    func graphvizRendersTheDotOfABuiltAndOfABrokenGraph() async throws {
        let graph = try await DiagnosticsFixtures.builder().build()
        for dot in [graph.dump(.dot), DiagnosticsFixtures.brokenBuilder().dump(.dot)] {
            let svg = try Graphviz.render(dot)
            #expect(svg.contains("<svg"))
            #expect(svg.contains("DiagStore"))
        }
    }

    @Test func mermaidIsAFlowchartWithEscapedLabels() async throws {
        let graph = try await DiagnosticsFixtures.builder().build()
        let mermaid = graph.dump(.mermaid, includingTimings: false)
        #expect(mermaid.hasPrefix("flowchart TD\n"))
        #expect(mermaid.contains(#"s1["DiagLogger<br/>Array#lt;String#gt;<br/>singleton #2"]"#))
        #expect(mermaid.contains("    s2 --> s0"))
        #expect(mermaid.contains("    class s3 transient"))
    }

    @Test func jsonHasItsDocumentedShapeAndRoundTrips() async throws {
        let graph = try await DiagnosticsFixtures.builder().build()
        let json = graph.dump(.json)
        let dump = try JSONDecoder().decode(GraphDump.self, from: Data(json.utf8))
        #expect(dump.format == "servicegraph")
        #expect(dump.version == 1)
        #expect(dump.built)
        #expect(dump.services.map(\.key) == ["DiagConfig", "DiagLogger", "DiagStore", "DiagHandler"])
        #expect(dump.services[2].dependencies == ["DiagConfig", "DiagLogger"])
        #expect(dump.services[3].lifetime == "transient")
        #expect(dump.services[3].initializationIndex == nil)
        #expect(dump.services[0].site.fileID == "ServiceGraphTests/DiagnosticsFixtures.swift")
        #expect(dump.services[0].factoryMilliseconds != nil)
        #expect(dump.initializationOrder == ["DiagConfig", "DiagLogger", "DiagStore"])
        #expect(dump.problems.isEmpty)
        // Round trip: what JSONDecoder read, JSONEncoder writes back to the same document.
        let again = try JSONDecoder().decode(GraphDump.self, from: JSONEncoder().encode(dump))
        #expect(again == dump)
    }

    @Test func durationsReadAsMillisecondsInTextAndJSON() async throws {
        var builder = ServiceGraph.Builder()
        builder.provide(DurationProbe.self) {
            try await Task.sleep(for: .milliseconds(3))
            return 1
        }
        let graph = try await builder.build()
        // The text shows milliseconds with two decimals, JSON with three; both at least the 3 ms slept.
        let text = graph.dump(.text)
        let shown = try #require(text.firstMatch(of: /factory (\d+)\.(\d\d) ms/))
        #expect(Int(shown.1)! >= 3)
        let json = graph.dump(.json)
        #expect(json.contains(/"factoryMilliseconds": ?\d+\.\d{3}[,\n ]/))
        let dump = try JSONDecoder().decode(GraphDump.self, from: Data(json.utf8))
        #expect(try #require(dump.services.first?.factoryMilliseconds) >= 3)
        try await graph.shutdown()
    }

    @Test func jsonEscapesWhatItMust() async throws {
        let graph = try await DiagnosticsFixtures.builder().build()
        _ = try JSONSerialization.jsonObject(with: Data(graph.dump(.json).utf8))
        _ = try JSONSerialization.jsonObject(with: Data(DiagnosticsFixtures.brokenBuilder().dump(.json).utf8))
    }
}

private enum DurationProbe: ServiceKey { typealias Value = Int }

/// The documented JSON shape (version 1), as a consumer would decode it.
struct GraphDump: Codable, Equatable {
    struct Site: Codable, Equatable {
        let fileID: String
        let line: Int
    }

    struct Service: Codable, Equatable {
        let key: String
        let valueType: String
        let lifetime: String
        let site: Site
        let override: Bool
        let dependencies: [String]
        let missingDependencies: [String]
        let initializationIndex: Int?
        let factoryMilliseconds: Double?
        let didAddMilliseconds: Double?
        let mark: String?
        let problems: [String]
    }

    struct Problem: Codable, Equatable {
        let code: String
        let key: String
        let path: [String]
        let site: Site?
        let message: String
    }

    let format: String
    let version: Int
    let built: Bool
    let totalMilliseconds: Double?
    let services: [Service]
    let missingKeys: [String]
    let initializationOrder: [String]
    let problems: [Problem]
}

/// The real Graphviz, run as a process.
enum Graphviz {
    static var isAvailable: Bool { path != nil }

    /// `dot` as the shell would find it: the first executable one on `PATH`.
    private static var path: String? {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        return directories.map { "\($0)/dot" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// `dot -Tsvg` of `source`; throws with Graphviz's message when it rejects the input.
    static func render(_ source: String) throws -> String {
        guard let path else { throw Failure(description: "Graphviz is not installed (CI installs it)") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["-Tsvg"]
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        input.fileHandleForWriting.write(Data(source.utf8))
        try input.fileHandleForWriting.close()
        let svg = output.fileHandleForReading.readDataToEndOfFile()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "dot failed: \(String(decoding: message, as: UTF8.self))")
        }
        return String(decoding: svg, as: UTF8.self)
    }
}
