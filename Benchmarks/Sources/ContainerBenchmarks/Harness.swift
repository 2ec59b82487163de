import CMallocStats

/// Takes ownership of a value, opaque to the optimizer, so it cannot drop or stack-promote what is
/// measured. Taking it `consuming` means every contender hands over a retained reference, as a
/// resolve that returns a service does.
@inline(never)
@_optimize(none)
func blackHole<T>(_ value: consuming T) {}

/// One row of the results: a scenario, a contender, its median, and extra figures.
struct Result {
    let scenario: String
    let contender: String
    /// The median of the samples, in nanoseconds per operation (or per service, for builds).
    let median: Double
    let unit: String
    var note: String = ""
}

/// How hard to measure: a quick smoke run for CI, or a full run for the table.
struct Effort {
    let samples: Int
    let targetSampleNanoseconds: Double
    let graphSizes: [Int]
    /// The sizes of the scale rows (one key type per service, a random DAG and a chain).
    var scaleSizes: [Int] = []

    static let full = Effort(
        samples: 25,
        targetSampleNanoseconds: 20_000_000,
        graphSizes: [100, 1_000, 10_000, 100_000],
        scaleSizes: [1_000, 10_000, 100_000, 1_000_000]
    )
    static let quick = Effort(
        samples: 3,
        targetSampleNanoseconds: 1_000_000,
        graphSizes: [100, 1_000],
        scaleSizes: [1_000, 10_000]
    )
}

let clock = ContinuousClock()

extension Duration {
    var nanoseconds: Double {
        Double(components.seconds) * 1e9 + Double(components.attoseconds) / 1e9
    }
}

/// The median nanoseconds per operation of `body(iterations)`, which must perform `iterations`
/// operations. The iteration count is calibrated so a sample takes about the target time.
func measure(_ effort: Effort, _ body: (Int) throws -> Void) rethrows -> Double {
    var iterations = 1
    while true {
        let elapsed = try clock.measure { try body(iterations) }.nanoseconds
        if elapsed > effort.targetSampleNanoseconds / 4 || iterations >= 1 << 26 {
            iterations = max(1, Int(Double(iterations) * effort.targetSampleNanoseconds / max(elapsed, 1)))
            break
        }
        iterations *= 4
    }
    var samples: [Double] = []
    for _ in 0..<effort.samples {
        let elapsed = try clock.measure { try body(iterations) }.nanoseconds
        samples.append(elapsed / Double(iterations))
    }
    return median(samples)
}

/// The asynchronous twin of ``measure(_:_:)``.
func measureAsync(_ effort: Effort, _ body: (Int) async throws -> Void) async rethrows -> Double {
    var iterations = 1
    while true {
        let start = clock.now
        try await body(iterations)
        let elapsed = start.duration(to: clock.now).nanoseconds
        if elapsed > effort.targetSampleNanoseconds / 4 || iterations >= 1 << 26 {
            iterations = max(1, Int(Double(iterations) * effort.targetSampleNanoseconds / max(elapsed, 1)))
            break
        }
        iterations *= 4
    }
    var samples: [Double] = []
    for _ in 0..<effort.samples {
        let start = clock.now
        try await body(iterations)
        samples.append(start.duration(to: clock.now).nanoseconds / Double(iterations))
    }
    return median(samples)
}

/// Like ``measureAsync(_:_:)`` for several contenders at once: each is calibrated on its own, then
/// the samples alternate between them, so a slow spell on a shared machine hits them all alike.
nonisolated(nonsending) func measureInterleaved(
    _ effort: Effort,
    _ contenders: [(Int) async throws -> Void]
) async throws -> [Double] {
    var iterations: [Int] = []
    for body in contenders {
        var count = 1
        while true {
            let start = clock.now
            try await body(count)
            let elapsed = start.duration(to: clock.now).nanoseconds
            if elapsed > effort.targetSampleNanoseconds / 4 || count >= 1 << 26 {
                count = max(1, Int(Double(count) * effort.targetSampleNanoseconds / max(elapsed, 1)))
                break
            }
            count *= 4
        }
        iterations.append(count)
    }
    var samples = Array(repeating: [Double](), count: contenders.count)
    for _ in 0..<effort.samples {
        for (index, body) in contenders.enumerated() {
            let start = clock.now
            try await body(iterations[index])
            samples[index].append(start.duration(to: clock.now).nanoseconds / Double(iterations[index]))
        }
    }
    return samples.map(median)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// Bytes currently allocated on the heap (glibc's mallinfo2; nil where it is not available).
func heapInUse() -> Int? {
    let bytes = cmallocstats_heap_in_use()
    return bytes < 0 ? nil : Int(bytes)
}

/// Peak resident memory of the process so far, in bytes.
func peakResidentBytes() -> Int {
    Int(cmallocstats_peak_resident_bytes())
}

func format(_ value: Double) -> String {
    if value >= 1_000_000 { return String(format: value / 1_000_000, digits: 2) + " ms" }
    if value >= 10_000 { return String(format: value / 1_000, digits: 1) + " µs" }
    return String(format: value, digits: 1) + " ns"
}

extension String {
    init(format value: Double, digits: Int) {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        var text = "\(rounded)"
        if let dot = text.firstIndex(of: ".") {
            let decimals = text.distance(from: dot, to: text.endIndex) - 1
            if decimals < digits { text += String(repeating: "0", count: digits - decimals) }
        }
        self = text
    }

    func padded(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
