/**
 * Builds the dashboard into web/dist (served by the api, see src/http/dashboard.ts). `npm run dev:web`
 * serves it with hot reload on :5173 and forwards every API path to the api (API_URL, default
 * http://127.0.0.1:3000): whatever is not the app's own (its roots, Vite's files) goes to the api.
 */
import tailwindcss from "@tailwindcss/vite"
import react from "@vitejs/plugin-react"
import { defineConfig } from "vite"
import { DASHBOARD_ROOTS } from "../src/http/api/dashboard.ts"

const appPaths = DASHBOARD_ROOTS.map((root) => root.slice(1)).join("|")
const apiPaths = `^/(?!$|(?:${appPaths})(?:[/?]|$)|@|src/|node_modules/|assets/)`

export default defineConfig({
  root: import.meta.dirname,
  plugins: [react(), tailwindcss()],
  // effect, React and TanStack Query make one ~600 kB chunk (190 kB gzipped); one request, cached for a year.
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 800 },
  server: {
    proxy: { [apiPaths]: { target: process.env.API_URL ?? "http://127.0.0.1:3000", changeOrigin: false } }
  }
})
