/// What a built graph remembers about one service for errors and dumps, kept small: a graph of
/// 100,000 services holds 100,000 of these.
struct ServiceRecord: Sendable {
    let key: any ServiceKey.Type
    let line: UInt32
    /// Index into the graph's table of distinct file names.
    let fileIndex: UInt32
    let lifetime: Lifetime
    let isOverride: Bool

    var name: String { key.serviceName }
}
