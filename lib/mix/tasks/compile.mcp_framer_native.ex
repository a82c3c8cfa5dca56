defmodule Mix.Tasks.Compile.McpFramerNative do
  @shortdoc "Builds the mcp_framer NIF with cargo"
  @moduledoc """
  Builds the Rust NIF crate with `cargo build --profile release --locked`
  (what `--release` means) and copies the library to `priv/native/`,
  where `McpFramer.Native` loads it. Cargo builds in the directory
  `CARGO_TARGET_DIR` names, if set, else in `target/`.

  With `MCP_FRAMER_CARGO_PROFILE=checked`, cargo builds the `checked`
  profile of `Cargo.toml` instead: the release build with debug
  assertions and overflow checks, for `make soak`. It is slower, and
  never what a project should ship.

  Cargo runs only when a `.rs` or `.toml` file under `native/`,
  `Cargo.toml`, `Cargo.lock` or `.cargo/config.toml` is not older than
  the library in `priv/native/`, or when the library there was built
  under another profile: `priv/native/cargo_profile` names the one it
  was built under (none named is `release`). `mix.exs` requires this
  file before the project compiles, since Mix needs the compiler first.
  """
  use Mix.Task.Compiler

  @crate "mcp_framer_nif"
  @root Path.expand("../../..", __DIR__)
  @profiles ["release", "checked"]

  @impl Mix.Task.Compiler
  def run(_args) do
    {built, installed} = library_names(:os.type())
    target = Path.join([@root, "priv", "native", installed])
    profile = profile()

    result = if up_to_date?(target, profile), do: {:noop, []}, else: build(built, target, profile)
    # priv/ may not have existed when Mix linked it into _build.
    Mix.Project.build_structure()
    result
  end

  @impl Mix.Task.Compiler
  def clean do
    File.rm_rf!(Path.join([@root, "priv", "native"]))
    :ok
  end

  defp profile do
    case System.get_env("MCP_FRAMER_CARGO_PROFILE") do
      unset when unset in [nil, ""] ->
        "release"

      profile when profile in @profiles ->
        profile

      other ->
        Mix.raise(~s(MCP_FRAMER_CARGO_PROFILE is "#{other}"; it must be release or checked))
    end
  end

  defp up_to_date?(target, profile) do
    case File.stat(target, time: :posix) do
      # Whole seconds: a source saved in the second of the last build is
      # taken as newer, and cargo, which tracks changes exactly, decides.
      {:ok, %{mtime: built}} ->
        built_profile(target) == profile and Enum.all?(sources(), &(mtime(&1) < built))

      {:error, _} ->
        false
    end
  end

  # The profile the library at target was built under, recorded beside it.
  defp built_profile(target) do
    case File.read(profile_record(target)) do
      {:ok, profile} -> String.trim(profile)
      {:error, _} -> "release"
    end
  end

  defp profile_record(target), do: Path.join(Path.dirname(target), "cargo_profile")

  defp sources do
    Path.wildcard(Path.join(@root, "native/**/*.{rs,toml}")) ++
      Enum.map(["Cargo.toml", "Cargo.lock", ".cargo/config.toml"], &Path.join(@root, &1))
  end

  defp mtime(path) do
    case File.stat(path, time: :posix) do
      {:ok, %{mtime: mtime}} -> mtime
      {:error, _} -> 0
    end
  end

  defp build(built, target, profile) do
    cargo = System.find_executable("cargo") || Mix.raise(missing_cargo())
    target_dir = target_dir()

    args = [
      "build",
      "--profile",
      profile,
      "--locked",
      "--package",
      @crate,
      "--target-dir",
      target_dir
    ]

    Mix.shell().info("Compiling NIF #{@crate} (cargo #{Enum.join(args, " ")})")

    case System.cmd(cargo, args, cd: @root, stderr_to_stdout: true, into: IO.stream()) do
      {_, 0} ->
        # A new file renamed over the old one: a VM that loaded the old
        # one maps its file, which must not change under it. (On Windows
        # a loaded DLL cannot be replaced at all.) Until the record names
        # the new profile, it names none, so that a build cut short
        # between the two is built again.
        File.mkdir_p!(Path.dirname(target))
        File.write!(profile_record(target), "building\n")
        new = "#{target}.#{System.pid()}"
        File.cp!(Path.join([target_dir, profile, built]), new)
        File.rename!(new, target)
        File.write!(profile_record(target), profile <> "\n")
        {:ok, []}

      {_, status} ->
        message = "cargo exited with status #{status} while building #{@crate}"
        Mix.shell().error(message)
        {:error, [diagnostic(message)]}
    end
  end

  # Where cargo is told to build, so that the library is found there: the
  # directory CARGO_TARGET_DIR names, as cargo would take it, else the
  # project's own; a target directory set in a cargo config file is not
  # followed.
  defp target_dir do
    case System.get_env("CARGO_TARGET_DIR") do
      dir when dir in [nil, ""] -> Path.join(@root, "target")
      dir -> Path.expand(dir, @root)
    end
  end

  @doc false
  # The library cargo builds on an OS (`:os.type/0`), and the name it is
  # copied to in priv/native/: the one `:erlang.load_nif/2` looks for,
  # given McpFramer.Native's path without its extension, which the BEAM
  # adds: `.dll` on Windows, `.so` on every Unix, macOS included.
  def library_names({:win32, _}), do: {"#{@crate}.dll", "lib#{@crate}.dll"}
  def library_names({:unix, :darwin}), do: {"lib#{@crate}.dylib", "lib#{@crate}.so"}
  def library_names({:unix, _}), do: {"lib#{@crate}.so", "lib#{@crate}.so"}

  defp missing_cargo do
    "cargo not found: mcp_framer builds a Rust NIF and needs Rust >= 1.91 (https://rustup.rs)"
  end

  defp diagnostic(message) do
    %Mix.Task.Compiler.Diagnostic{
      compiler_name: "mcp_framer_native",
      file: Path.join(@root, "Cargo.toml"),
      message: message,
      position: nil,
      severity: :error
    }
  end
end
