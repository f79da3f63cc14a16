"""The command layer: the one place that checks, assembles and runs a render and a sweep, under
both faces of physarum (the `physarum` command, render/cli/, and the Python API, physarum_api/),
so that both refuse the same inputs, with the same messages, and keep the same sections.

- arguments: what the API's arguments must be (a Preset, a mapping of settings, a list of
  formats...): TypeError naming the argument and what it takes; the command's parser already
  gives each flag its type;
- presets: a preset by name or path, and one changed by settings, keeping every section it has
  (checkpoint, output.fields, output.volume);
- render: a render's checks before torch, its outputs, recorders and options, and the run;
- sweep: a sweep read and checked (2D presets only, a batch of at least 1), its dry run, its run.

The package imports nothing heavy: `physarum --help`, `presets`, `validate` and `sweep --dry-run`
load no torch (each module imports the stages it runs inside its functions, `# start-up:`).
"""
