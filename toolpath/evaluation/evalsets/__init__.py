"""ADK eval sets, one home: the files (``adk_models``, ``files``, ``eval_config``, ``conversions``, ``json_errors``,
``result_files``), running a case's agent (``inference``, ``simulation/``), and judging it by its criteria
(``criteria``, ``custom_metrics``, ``efficiency``, ``evaluator``, ``case_results``, ``history``)."""
