import Synchronization

/// A thread-safe log of lifecycle events, so the example can print the order hooks ran in.
final class Journal: Sendable {
    private let entries = Mutex<[String]>([])

    func record(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

/// A thread-safe counter.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)

    func increment() -> Int { value.add(1, ordering: .relaxed).newValue }
}

/// A thread-safe string table.
final class Rows: Sendable {
    private let rows = Mutex<[String: String]>([:])

    func set(_ key: String, _ value: String) { rows.withLock { $0[key] = value } }
    func get(_ key: String) -> String? { rows.withLock { $0[key] } }
    var count: Int { rows.withLock { $0.count } }
}
