# Mix must know the NIF compiler before it compiles the project.
Code.require_file("lib/mix/tasks/compile.mcp_framer_native.ex", __DIR__)

defmodule McpFramer.MixProject do
  use Mix.Project

  @version "0.1.0"

  def project do
    [
      app: :mcp_framer,
      version: @version,
      elixir: "~> 1.14",
      compilers: [:mcp_framer_native | Mix.compilers()],
      elixirc_paths: elixirc_paths(Mix.env()),
      # make soak's script, run by mix run, not by mix test.
      test_ignore_filters: ["test/soak.exs"],
      start_permanent: Mix.env() == :prod,
      deps: [],
      description: description(),
      package: package(),
      docs: [main: "McpFramer", source_ref: "v#{@version}"]
    ]
  end

  # lib/mix is loaded by the first line of this file, not compiled.
  defp elixirc_paths(:test), do: ["test/support" | elixirc_paths(:prod)]
  defp elixirc_paths(_env), do: ["lib/mcp_framer.ex", "lib/mcp_framer"]

  def application do
    [extra_applications: []]
  end

  defp description do
    "Frames the stdout of an MCP stdio server into newline-delimited JSON-RPC " <>
      "messages with a Rust NIF: a drop-in, faster replacement for ConduitMcp's framer."
  end

  defp package do
    [
      licenses: ["MIT"],
      links: %{
        "MCP stdio transport" =>
          "https://modelcontextprotocol.io/specification/2025-06-18/basic/transports",
        "ConduitMcp" => "https://hexdocs.pm/conduit_mcp"
      },
      files: ~w(
        lib native/mcp_framer_core/src native/mcp_framer_core/Cargo.toml
        native/mcp_framer_nif/src native/mcp_framer_nif/Cargo.toml
        .cargo/config.toml Cargo.toml Cargo.lock mix.exs README.md LICENSE .formatter.exs
      )
    ]
  end
end
