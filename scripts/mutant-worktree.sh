# Sourced by simulation-mutants.sh and stress-mutants.sh, with `root`, `work` and `tree` set:
# prepares the worktree in which each mutant is applied, and lists the mutants to run.
#
# The worktree is kept between runs (git rewrites only the files that differ, so the build stays
# incremental); `reset_mutant_tree` puts it back at this checkout's HEAD (before each mutant,
# and on exit). Sets `head` and `names` (the arguments, else every patch).

mkdir -p "$work"
head="$(git -C "$root" rev-parse HEAD)"
git -C "$root" worktree prune
if ! git -C "$tree" rev-parse --git-dir >/dev/null 2>&1; then
    rm -rf "$tree"
    git -C "$root" worktree add --quiet --detach "$tree" "$head"
fi

reset_mutant_tree() {
    git -C "$tree" checkout --quiet --detach "$head" && git -C "$tree" reset --quiet --hard "$head"
}
trap 'reset_mutant_tree >/dev/null 2>&1 || true' EXIT

if [ $# -gt 0 ]; then names=("$@"); else
    names=()
    for patch in "$root"/Verification/simulation-mutants/*.patch; do names+=("$(basename "$patch" .patch)"); done
fi
