/// A protocol named and shaped like swift-service-lifecycle's `Service`, which server apps import
/// alongside ServiceGraph: a file that imports both must still be able to say `Service`.
public protocol Service: Sendable {
    func run() async throws
}
