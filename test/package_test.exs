defmodule McpFramer.PackageTest do
  use ExUnit.Case, async: true

  # What a project depending on the Hex package gets is the files mix.exs
  # lists, alone; mix builds the NIF from them with `cargo build --locked`.
  @root Path.expand("..", __DIR__)

  @tag timeout: 300_000
  test "the package's files alone are a workspace the NIF builds from" do
    dir = Path.join(System.tmp_dir!(), "mcp_framer_package_#{System.unique_integer([:positive])}")
    on_exit(fn -> File.rm_rf!(dir) end)

    for pattern <- Mix.Project.config()[:package][:files] do
      sources = Path.wildcard(Path.join(@root, pattern), match_dot: true)
      assert sources != [], "#{pattern}, in mix.exs's package files, is not in the project"

      for source <- sources do
        copy = Path.join(dir, Path.relative_to(source, @root))
        File.mkdir_p!(Path.dirname(copy))
        File.cp_r!(source, copy)
      end
    end

    # A check, not a build: the release build's proc macros and build
    # scripts in the project's own target directory serve it, so it takes
    # seconds; the registry's crates are those the project's build fetched.
    args = ~w(check --release --locked --offline --quiet --package mcp_framer_nif)
    env = [{"CARGO_TARGET_DIR", Path.join(@root, "target")}]
    {output, status} = System.cmd("cargo", args, cd: dir, env: env, stderr_to_stdout: true)
    assert status == 0, "cargo #{Enum.join(args, " ")} in the package:\n#{output}"
  end
end
