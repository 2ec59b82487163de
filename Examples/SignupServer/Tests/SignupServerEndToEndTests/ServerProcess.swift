import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The SignupServer executable, started as a child process on a free loopback port, with its log
/// (standard error) collected.
final class ServerProcess: Sendable {
    let process: Process
    private let output = LogBuffer()

    /// The directory of the test run's products, where `swift build` put the server executable.
    static var executable: URL {
        if let path = ProcessInfo.processInfo.environment["SIGNUP_SERVER_EXECUTABLE"] {
            return URL(fileURLWithPath: path)
        }
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        // On Apple platforms the tests run from inside an .xctest bundle.
        while directory.path.contains(".xctest") { directory.deleteLastPathComponent() }
        return directory.appendingPathComponent("SignupServer")
    }

    init(arguments: [String]) throws {
        process = Process()
        process.executableURL = Self.executable
        process.arguments = arguments
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = pipe
        try process.run()
        // Only the child writes: without the parent's copy of the write end, its exit ends the output.
        try pipe.fileHandleForWriting.close()
        let reading = pipe.fileHandleForReading
        let output = self.output
        Thread.detachNewThread {
            while true {
                let data = reading.availableData
                if data.isEmpty { break }
                output.append(String(decoding: data, as: UTF8.self))
            }
            output.finish()
        }
    }

    /// Everything the server logged so far.
    var log: String { output.text }

    /// The log's lines, each without its timestamp and level.
    var logLines: [String] { log.split(separator: "\n").map(String.init) }

    /// The index of the first log line containing `text`.
    func line(containing text: String) -> Int? { logLines.firstIndex { $0.contains(text) } }

    /// Waits (polling) until the log has a line matching `pattern`, and returns its first capture;
    /// fails after `limit`, or when the process exits first.
    func waitForLog(_ pattern: String, limit: Duration = .seconds(60)) async throws -> String {
        let regex = try Regex(pattern)
        let deadline = ContinuousClock.now + limit
        while true {
            if let match = log.firstMatch(of: regex) {
                return match.output.count > 1 ? String(describing: match.output[1].substring ?? "") : ""
            }
            // Once the process has exited and its output is all read, the log is complete.
            guard !output.isFinished, ContinuousClock.now < deadline else {
                throw ServerError("no log line matched \(pattern); the log:\n\(log)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Waits for the process to exit and returns its status; fails after `limit` (and kills it).
    func waitForExit(limit: Duration = .seconds(60)) async throws -> Int32 {
        let deadline = ContinuousClock.now + limit
        // The output ends when the process (the only writer) has exited.
        while process.isRunning || !output.isFinished {
            guard ContinuousClock.now < deadline else {
                kill(process.processIdentifier, SIGKILL)
                throw ServerError("the server did not exit within \(limit); the log:\n\(log)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return process.terminationStatus
    }

    func signal(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

/// What the server wrote, appended from the pipe's reading thread.
final class LogBuffer: Sendable {
    private let buffer = Mutex((text: "", isFinished: false))

    func append(_ text: String) { buffer.withLock { $0.text += text } }

    /// Marks the end of the output (the pipe's end of file).
    func finish() { buffer.withLock { $0.isFinished = true } }

    var text: String { buffer.withLock { $0.text } }

    var isFinished: Bool { buffer.withLock { $0.isFinished } }
}

struct ServerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A plain HTTP client over loopback.
struct Client {
    let base: URL
    private let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 30
        return URLSession(configuration: configuration)
    }()

    init(port: Int) {
        base = URL(string: "http://127.0.0.1:\(port)")!
    }

    func send(_ method: String, _ path: String, json: String? = nil) async throws -> (status: Int, body: String) {
        var request = URLRequest(url: URL(string: path, relativeTo: base)!)
        request.httpMethod = method
        if let json {
            request.httpBody = Data(json.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await session.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }
}

/// A directory of its own for a test's database, removed afterwards.
func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("signup-e2e-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}
