@testable import ServiceGraph
import Testing

private enum SiteKey0: ServiceKey { typealias Value = Int }
private enum SiteKey1: ServiceKey { typealias Value = Int }
private enum SiteKey2: ServiceKey { typealias Value = Int }
private enum SiteKey3: ServiceKey { typealias Value = Int }
private enum SiteKey4: ServiceKey { typealias Value = Int }
private enum SiteKey5: ServiceKey { typealias Value = Int }
private enum SiteKey6: ServiceKey { typealias Value = Int }
private enum SiteKey7: ServiceKey { typealias Value = Int }
private enum SiteKey8: ServiceKey { typealias Value = Int }
private enum SiteKey9: ServiceKey { typealias Value = Int }
private enum SiteKey10: ServiceKey { typealias Value = Int }
private enum SiteKey11: ServiceKey { typealias Value = Int }
private enum SiteKey12: ServiceKey { typealias Value = Int }
private enum SiteKey13: ServiceKey { typealias Value = Int }

/// A built graph keeps each registration's site as an index into its list of distinct files, found while
/// the core is made: by a search of the first few files, then through a dictionary. Every way there must
/// give each service its own file and line.
@Suite("Registration sites across many files")
struct RegistrationSiteFilesTests {
    /// Ten distinct `#fileID` literals: more than the core searches in order before it hashes.
    private static func file(_ index: Int) -> StaticString {
        switch index {
        case 0: "Sites/File0.swift"
        case 1: "Sites/File1.swift"
        case 2: "Sites/File2.swift"
        case 3: "Sites/File3.swift"
        case 4: "Sites/File4.swift"
        case 5: "Sites/File5.swift"
        case 6: "Sites/File6.swift"
        case 7: "Sites/File7.swift"
        case 8: "Sites/File8.swift"
        default: "Sites/File9.swift"
        }
    }

    @Test(
        "each service keeps its file and line, whether its file is new, the last one, one of the first few, or one past them",
        arguments: [
            // Files in the order of the keys: ten new ones, then files seen before, among the first eight
            // (found by the search) and past them (found through the dictionary), in runs and not.
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 3, 9, 9, 0],
            // A single file, then two alternating: no dictionary at all.
            [0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 0, 1, 0, 1],
            // Files first seen late, found again through the dictionary.
            [9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 8, 1, 9, 2],
        ]
    )
    func sitesAcrossFiles(files: [Int]) async throws {
        var builder = ServiceGraph.Builder()
        let keys: [any ServiceKey.Type] = [
            SiteKey0.self, SiteKey1.self, SiteKey2.self, SiteKey3.self, SiteKey4.self, SiteKey5.self, SiteKey6.self,
            SiteKey7.self, SiteKey8.self, SiteKey9.self, SiteKey10.self, SiteKey11.self, SiteKey12.self,
            SiteKey13.self,
        ]
        func provide<Key: ServiceKey>(_ key: Key.Type, at position: Int) {
            builder.provide(key, fileID: Self.file(files[position]), line: UInt(100 + position)) {
                position as! Key.Value
            }
        }
        for (position, key) in keys.enumerated() { provide(key, at: position) }
        let graph = try await builder.build()
        // Each file once: a file seen before is found, not added again.
        #expect(graph._core.files.count == Set(files).count)
        for (position, key) in keys.enumerated() {
            let slot = try #require(graph._core.slot(ofKeyID: ObjectIdentifier(key)))
            let site = graph._core.site(slot)
            #expect(site.fileID == Self.file(files[position]).description, "\(key)")
            #expect(site.line == 100 + position, "\(key)")
        }
        try await graph.shutdown()
    }
}
