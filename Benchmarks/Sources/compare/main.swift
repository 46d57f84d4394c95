// `swift run -c release --package-path Benchmarks compare [--json] [--repetitions N] [--only a,b]`
Compare.main(arguments: Array(CommandLine.arguments.dropFirst()))
