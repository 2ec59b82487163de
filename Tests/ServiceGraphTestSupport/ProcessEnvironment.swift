import Foundation

/// What the test process was started with.
package enum ProcessEnvironment {
    package static func value(_ name: String) -> String? {
        ProcessInfo.processInfo.environment[name]
    }

    /// Whether the tests run under a sanitizer (CI sets `SERVICEGRAPH_SANITIZER`). The 100,000-service
    /// tests are left to the plain run there: they check stack depth and output size,
    /// which a sanitizer's larger frames and 10x slower code change, and their minutes of synchronous
    /// work would hold the cooperative pool's threads from every other test.
    package static var isSanitizerRun: Bool { value("SERVICEGRAPH_SANITIZER") != nil }
}
