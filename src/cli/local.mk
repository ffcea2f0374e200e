# cli: the ftmesh command (the only code that prints or exits)
ftmesh_SOURCES += src/cli/main.c src/cli/cli.h src/cli/opts.c src/cli/output.c src/cli/outfile.c src/cli/faults_record.c \
	src/cli/json.c src/cli/cmd_rings.c src/cli/cmd_allreduce.c src/cli/allreduce.h src/cli/allreduce_report.c src/cli/cmd_sweep.c \
	src/cli/cmd_train.c src/cli/train_opts.c src/cli/train_report.c src/cli/train_report.h \
	src/cli/faults_cli.c src/cli/faults_cli.h src/cli/pictures.c \
	src/cli/sweep_tput.c src/cli/sweep_list.c src/cli/mpi_cli.c src/cli/memory.c

# End-to-end runs of the command (exit codes, errors, JSON keys); cli.sh
# and demo_html.sh are in TESTS from Makefile.am (the longest first).
EXTRA_DIST += tests/cli.sh
# Their JSON checks, run in one python3 at the end of a script
EXTRA_DIST += tests/cli_lib.sh tests/json_lib.sh tests/json_checks.py

# Watching a run: --trace (Chrome trace JSON) and ftmesh demo
ftmesh_SOURCES += src/cli/trace_json.c src/cli/trace_json.h src/cli/cmd_demo.c src/cli/demo.h \
	src/cli/demo_text.c src/cli/demo_story.c src/cli/demo_repair.c src/cli/demo_failure.c
TESTS += tests/trace_cli.sh tests/demo_cli.sh
EXTRA_DIST += tests/trace_cli.sh tests/demo_cli.sh tests/demo_html.sh tests/demo_cli.py tests/demo_order.py tests/demo_words.py \
	tests/demo_html.py
EXTRA_DIST += tests/trace_cli.py tests/browse.py
# tests/faults_cli.sh and tests/repair_cli.sh: in TESTS from Makefile.am (the longest first)
EXTRA_DIST += tests/faults_cli.sh tests/repair_cli.sh
# the command's fault scripts start chips that die and come back, in train
# and allreduce: run under ThreadSanitizer too
THREADED_TESTS += tests/faults_cli.sh tests/repair_cli.sh
# Output files written whole or not at all, signals, checks before any work
# tests/output_cli.sh: in TESTS from Makefile.am (the longest first)
EXTRA_DIST += tests/output_cli.sh
