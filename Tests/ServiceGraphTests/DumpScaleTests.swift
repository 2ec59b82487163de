import ServiceGraph
import Testing
import ServiceGraphTestSupport

/// Dumps of very deep graphs: iterative (no stack overflow, even in a debug build) and linear in size.
///
/// Time is not asserted here (the machine is shared and noisy); the release figures are measured
/// apart. Size is: a dump of 100,000 services takes no more bytes per service than one of 1,000.
@Suite("Dump scale")
struct DumpScaleTests {
    private static let formats: [DumpFormat] = [.text, .dot, .mermaid, .json]
    private static let large = 100_000
    private static let small = 1_000

    /// A chain of `length` singletons, each depending on the one before; with `failing`, the last
    /// one's factory throws.
    private static func chain(_ length: Int, failing: Bool = false) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        for index in 0..<length {
            HexKeys.provide(
                index,
                dependsOn: index == 0 ? nil : index - 1,
                failing: failing && index == length - 1,
                into: &builder
            )
        }
        return builder
    }

    /// `length` singletons in one cycle: each depends on the next, the last on the first.
    private static func cycle(_ length: Int) -> ServiceGraph.Builder {
        var builder = ServiceGraph.Builder()
        for index in 0..<length {
            HexKeys.provide(index, dependsOn: (index + 1) % length, into: &builder)
        }
        return builder
    }

    /// Checks that `dump` of the large graph takes at most 10% more bytes per service than of the
    /// small one (names all have the same length; only numbers grow), and, with `boundedLines`, that
    /// no line is longer (but in JSON, which puts each service's dependencies on one line).
    private static func expectLinear(
        _ what: String,
        in formats: [DumpFormat] = formats,
        boundedLines: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation,
        _ dump: (_ large: Bool, DumpFormat) throws -> String
    ) rethrows {
        for format in formats {
            let smallDump = try dump(false, format)
            let largeDump = try dump(true, format)
            let smallPerService = Double(smallDump.utf8.count) / Double(small)
            let largePerService = Double(largeDump.utf8.count) / Double(large)
            #expect(
                largePerService <= smallPerService * 1.1,
                "\(what), \(format): \(largePerService) bytes per service for \(large), \(smallPerService) for \(small)",
                sourceLocation: sourceLocation
            )
            if boundedLines && format != .json {
                #expect(
                    longestLine(largeDump) <= longestLine(smallDump) + 8,
                    "\(what), \(format): lines must not grow with depth",
                    sourceLocation: sourceLocation
                )
            }
        }
    }

    /// The length in bytes of the longest line of `text` (a plain loop: the test runs in debug).
    private static func longestLine(_ text: String) -> Int {
        var text = text
        return text.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return 0 }
            var (longest, start, index) = (0, 0, 0)
            while index < bytes.count {
                if base[index] == 0x0A {
                    longest = max(longest, index - start)
                    start = index + 1
                }
                index += 1
            }
            return max(longest, bytes.count - start)
        }
    }

    @Test(.enabled(if: !ProcessEnvironment.isSanitizerRun, "100,000-service dumps run in the plain run"))
    func aHundredThousandDeepChainDumpsInEveryFormatInLinearSize() async throws {
        let builders = (small: Self.chain(Self.small), large: Self.chain(Self.large))
        Self.expectLinear("builder of a chain") { large, format in
            (large ? builders.large : builders.small).dump(format)
        }
        let graphs = (small: try await builders.small.build(), large: try await builders.large.build())
        Self.expectLinear("built chain") { large, format in
            (large ? graphs.large : graphs.small).dump(format, includingTimings: false)
        }
        let text = graphs.large.dump(.text, includingTimings: false)
        #expect(text.contains("(depth \(Self.large - 1)) \(HexKeys.name(0)): Int [singleton, #1]"))
    }

    @Test(.enabled(if: !ProcessEnvironment.isSanitizerRun, "100,000-service dumps run in the plain run"))
    func aFailedBuildOfAHundredThousandDeepChainDumpsInLinearSize() async throws {
        var errors: [ServiceGraphError] = []
        for length in [Self.small, Self.large] {
            let error = await #expect(throws: ServiceGraphError.self) {
                try await Self.chain(length, failing: true).build()
            }
            errors.append(try #require(error))
        }
        // The same renderers as a built graph's (checked in every format above): the tree and JSON here.
        try Self.expectLinear("failed build of a chain", in: [.text, .json]) { large, format in
            try #require(errors[large ? 1 : 0].dump(format))
        }
        let text = try #require(errors[1].dump(.text))
        #expect(text.contains("\(HexKeys.name(Self.large - 1)): Int [singleton]"))
        #expect(text.contains("✗ factory failed"))
    }

    @Test(.enabled(if: !ProcessEnvironment.isSanitizerRun, "100,000-service dumps run in the plain run"))
    func aHundredThousandMemberCycleDumpsInEveryFormatInLinearSize() throws {
        let builders = (small: Self.cycle(Self.small), large: Self.cycle(Self.large))
        // A cycle's problem names every member on one line: lines are not bounded.
        Self.expectLinear("builder of a cycle", boundedLines: false) { large, format in
            (large ? builders.large : builders.small).dump(format)
        }
        let text = builders.large.dump(.text)
        #expect(text.contains("(depth \(Self.large)) \(HexKeys.name(0)) (cycle)"))
        #expect(text.contains("Problems:\n  1. cycle: \(HexKeys.name(0)) → \(HexKeys.name(1)) → "))

        // A failed validation's dump is the builder's (the same renderers, checked at size above).
        let error = try #require(throws: ServiceGraphError.self) { try builders.small.validate() }
        #expect(error.problems[0].path.count == Self.small + 1)
        for format in Self.formats {
            #expect(error.dump(format) == builders.small.dump(format))
        }
    }

    @Test func deepTreesStopIndentingAndSayWhere() throws {
        let depth = 30
        let text = Self.chain(depth + 1).dump(.text)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let cap = 24
        let indent = String(repeating: "   ", count: cap - 1)
        let name = { (index: Int) in HexKeys.name(index) }
        // The root is service 30; the service at depth d is 30 - d.
        #expect(lines[1].hasPrefix("\(name(depth)): Int [singleton] @ "))
        #expect(lines[2].hasPrefix("└─ \(name(depth - 1)): "))
        #expect(lines[cap + 1].hasPrefix(indent + "└─ \(name(depth - cap)): "), "depth \(cap) is still indented")
        #expect(
            lines[cap + 2]
                == indent
                + "┆ deeper than \(cap) levels: the tree goes on at this indentation, each line with its depth"
        )
        #expect(lines[cap + 3].hasPrefix(indent + "└─ (depth \(cap + 1)) \(name(depth - cap - 1)): "))
        #expect(lines[depth + 2].hasPrefix(indent + "└─ (depth \(depth)) \(name(0)): "))
        #expect(lines.count == depth + 4, "one line per service, the header, the note and the final newline")
    }

    @Test func everyServiceAppearsEvenWhenOnlyACycleReachesIt() {
        // A root (3) and, apart from it, a cycle nothing else depends on (0 → 1 → 2 → 0).
        var builder = ServiceGraph.Builder()
        for index in 0..<3 { HexKeys.provide(index, dependsOn: (index + 1) % 3, into: &builder) }
        HexKeys.provide(3, dependsOn: nil, into: &builder)
        let text = builder.dump(.text)
        for index in 0..<4 {
            #expect(text.contains("\(HexKeys.name(index)): Int"), "service \(index): \(text)")
        }
        #expect(text.contains("\(HexKeys.name(0)) (cycle)"))
    }
}

/// Distinct keys made at run time with short names, for dumps of 100,000 services: key `n` spells
/// `n` in five hexadecimal digits, `H1<H8<H6<HA<H0<HexRoot>>>>>` for 0x0AD81 (the last digit outermost).
private protocol HexKey: ServiceKey where Value == Int {}
private enum HexRoot: HexKey { typealias Value = Int }
private enum H0<Inner: HexKey>: HexKey { typealias Value = Int }
private enum H1<Inner: HexKey>: HexKey { typealias Value = Int }
private enum H2<Inner: HexKey>: HexKey { typealias Value = Int }
private enum H3<Inner: HexKey>: HexKey { typealias Value = Int }
private enum H4<Inner: HexKey>: HexKey { typealias Value = Int }
private enum H5<Inner: HexKey>: HexKey { typealias Value = Int }
private enum H6<Inner: HexKey>: HexKey { typealias Value = Int }
private enum H7<Inner: HexKey>: HexKey { typealias Value = Int }
private enum H8<Inner: HexKey>: HexKey { typealias Value = Int }
private enum H9<Inner: HexKey>: HexKey { typealias Value = Int }
private enum HA<Inner: HexKey>: HexKey { typealias Value = Int }
private enum HB<Inner: HexKey>: HexKey { typealias Value = Int }
private enum HC<Inner: HexKey>: HexKey { typealias Value = Int }
private enum HD<Inner: HexKey>: HexKey { typealias Value = Int }
private enum HE<Inner: HexKey>: HexKey { typealias Value = Int }
private enum HF<Inner: HexKey>: HexKey { typealias Value = Int }

extension HexKey {
    /// This key wrapped in the key of one more hexadecimal digit.
    fileprivate static func appending(_ digit: Int) -> any HexKey.Type {
        switch digit {
        case 0: H0<Self>.self
        case 1: H1<Self>.self
        case 2: H2<Self>.self
        case 3: H3<Self>.self
        case 4: H4<Self>.self
        case 5: H5<Self>.self
        case 6: H6<Self>.self
        case 7: H7<Self>.self
        case 8: H8<Self>.self
        case 9: H9<Self>.self
        case 10: HA<Self>.self
        case 11: HB<Self>.self
        case 12: HC<Self>.self
        case 13: HD<Self>.self
        case 14: HE<Self>.self
        default: HF<Self>.self
        }
    }
}

private struct HexFailure: Error {}

private enum HexKeys {
    static func key(_ index: Int) -> any HexKey.Type {
        var key: any HexKey.Type = HexRoot.self
        for place in 0..<5 { key = key.appending((index >> (4 * place)) & 0xF) }
        return key
    }

    static func name(_ index: Int) -> String { key(index).serviceName }

    /// Provides key `index` as one more than its dependency; with `failing`, its factory throws.
    static func provide(
        _ index: Int,
        dependsOn dependency: Int?,
        failing: Bool = false,
        into builder: inout ServiceGraph.Builder
    ) {
        func open<Key: HexKey>(_ key: Key.Type) {
            guard let dependency else {
                builder.provide(key) {
                    if failing { throw HexFailure() }
                    return 1
                }
                return
            }
            func open<Dependency: HexKey>(_ dependency: Dependency.Type) {
                builder.provide(key, dependsOn: dependency) { value in
                    if failing { throw HexFailure() }
                    return value + 1
                }
            }
            open(self.key(dependency))
        }
        open(key(index))
    }
}
