// `swift run -c release --package-path Benchmarks compare [--json] [--repetitions N] [--only a,b] [--peers p,q]`
Compare.main(CompareCommand.parseOrExit())
