#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Prints the results as a Markdown table: each row's median, its ratio to hand-wired in the same
/// scenario, and ServiceGraph's speed-up over each peer.
func printTable(_ results: [Result]) {
    print("\n| scenario | contender | median | × hand-wired | ServiceGraph is faster by | notes |")
    print("|---|---|---:|---:|---:|---|")
    var scenarios: [String] = []
    for result in results where !scenarios.contains(result.scenario) { scenarios.append(result.scenario) }
    for scenario in scenarios {
        let rows = results.filter { $0.scenario == scenario }
        let hand = rows.first { $0.contender.hasPrefix("hand-wired") }?.median
        let ours = rows.first { $0.contender == "ServiceGraph" }?.median
        for row in rows {
            let ratio = hand.map { String(format: row.median / $0, digits: 2) + "x" } ?? "—"
            var speedup = "—"
            if let ours, row.contender != "ServiceGraph", !row.contender.hasPrefix("hand-wired") {
                speedup = String(format: row.median / ours, digits: 1) + "x"
            }
            let median = "\(format(row.median)) \(row.unit.replacing("ns/", with: "/"))"
            print("| \(scenario) | \(row.contender) | \(median) | \(ratio) | \(speedup) | \(row.note) |")
        }
    }
}

func writeFile(_ path: String, _ contents: String) throws {
    guard let file = fopen(path, "w") else { throw WriteError(path: path) }
    defer { fclose(file) }
    fputs(contents, file)
}

struct WriteError: Error {
    let path: String
}
