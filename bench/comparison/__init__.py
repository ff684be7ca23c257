"""bench/compare.py's modules: scatterkit against its peers on the canonical workloads.

Imports flow down this list; compare.py, the command line, sits on top.

    run              a run: every workload at every thread count, a progress line per row
    reports          the results file (bench/RESULTS.md by default) and the printed tables
    plots            results.png
    tables           the Markdown tables, from the measured rows
    measurement      one workload at one thread count: warm-up, checks, interleaved rounds;
                     the results as cells in rows
    checks           an implementation's output against scatterkit's
    scatterkit_rows  the floor, scatterkit's calls, the baseline build's, family H's references
    peers/           OpenVINO, PyTorch, ONNX Runtime and NumPy, one module each
    implementations  the rows' names and order, and what a row's setup returns
    baseline         --baseline: another installed build, imported as scatterkit_baseline
    environment      the machine, the package versions, the checkout, this build
    workloads        W1-W6 and family H, and the arrays they run on

bench/bare_loop.py (family H's bare serial loop in C) is imported from the directory above, which
must be on sys.path (compare.py puts it there).
"""
