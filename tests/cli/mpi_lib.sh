# Sourced by the MPI CLI tests (test_cli_mpi.sh, test_cli_mpi_reshard.sh) after
# lib.sh, with SUPP set (the ASan build's LSan suppressions, or empty): `mpi`
# runs a command under mpirun with its output in $WORK/out and $WORK/err,
# `es_lines` is equishard's part of that stderr, and $WORK/rc.sh records each
# rank's exit code in $RC_DIR/rc.RANK.
# CI runs as root; OpenMPI refuses that unless told. More processes than cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [[ -n $SUPP ]]; then
    # ASan build. OpenMPI keeps allocations until exit, and its stacks (no frame
    # pointers) are readable only with the slow unwinder, which makes MPI_Init
    # ~10x slower. So runs check memory errors but not leaks, except those marked
    # LEAKCHECK=1: there OpenMPI's leaks are suppressed (lsan_mpi.supp, plugins
    # kept loaded) and equishard's are reported.
    export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
fi
mpi() { # NP command... (stdout/stderr to $WORK/out, $WORK/err); returns the exit code
    local np=$1; shift
    local env=() v
    for v in ASAN_OPTIONS UBSAN_OPTIONS; do
        [[ -n ${!v:-} ]] && env+=(-x "$v")
    done
    if [[ ${LEAKCHECK:-0} == 1 && -n $SUPP ]]; then
        env=(-x "ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=1" -x "UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}"
             -x "LSAN_OPTIONS=suppressions=$SUPP:print_suppressions=0:fast_unwind_on_malloc=0"
             -x OMPI_MCA_mca_base_component_disable_dlclose=1
             -x PMIX_MCA_mca_base_component_disable_dlclose=1)
    fi
    timeout 300 "$MPIRUN" --oversubscribe "${env[@]}" -np "$np" "$@" >"$WORK/out" 2>"$WORK/err"
    local rc=$?
    [[ $rc == 124 ]] && fail "timed out (hang?): mpirun -np $np $*"
    return $rc
}
# The equishard lines of stderr (mpirun adds its own report of failed processes).
es_lines() { grep '^equishard' "$WORK/err"; }

# Each rank's exit code, when mpirun reports only the first (see its use).
cat >"$WORK/rc.sh" <<'EOF'
#!/bin/sh
"$@"
rc=$?
echo "$rc" >"$RC_DIR/rc.${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-x}}"
exit "$rc"
EOF
chmod +x "$WORK/rc.sh"
